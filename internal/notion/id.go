package notion

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

var (
	hex32RE     = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	hex32TailRE = regexp.MustCompile(`[0-9a-fA-F]{32}$`)
)

// ParseID returns the dashed form (8-4-4-4-12) of a Notion id given dashed
// or undashed, or inside a link to it ("https://www.notion.so/Title-<32
// hex>?v=...").
func ParseID(s string) (string, error) {
	in := strings.TrimSpace(s)
	flat := strings.ReplaceAll(in, "-", "")
	var id string
	if u, err := url.Parse(in); err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http") {
		seg := strings.TrimRight(u.Path, "/")
		seg = seg[strings.LastIndexByte(seg, '/')+1:]
		id = hex32TailRE.FindString(strings.ReplaceAll(seg, "-", ""))
	} else if hex32RE.MatchString(flat) {
		id = flat
	}
	if id == "" {
		return "", fmt.Errorf("%q is not a Notion id: want 32 hex digits (dashed or not) or a link to the page", in)
	}
	id = strings.ToLower(id)
	return id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:], nil
}
