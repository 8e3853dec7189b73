package imap

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mailbox is what SELECT or EXAMINE reported.
type Mailbox struct {
	Name        string
	Exists      int
	UIDValidity uint32
	UIDNext     uint32
	ReadOnly    bool
}

// Select opens a mailbox read-write (SELECT) or read-only (EXAMINE, which
// never changes a flag, not even \Recent).
func (c *Client) Select(ctx context.Context, name string, readOnly bool) (Mailbox, error) {
	cmd := "SELECT"
	if readOnly {
		cmd = "EXAMINE"
	}
	untagged, err := c.run(ctx, cmd, cmd, nil, astring(name))
	if err != nil {
		return Mailbox{}, err
	}
	mb := Mailbox{Name: name, ReadOnly: readOnly}
	for _, r := range untagged {
		if r.Status == "OK" {
			f := strings.Fields(r.Code)
			if len(f) == 2 {
				n, _ := strconv.ParseUint(f[1], 10, 32)
				switch strings.ToUpper(f[0]) {
				case "UIDVALIDITY":
					mb.UIDValidity = uint32(n)
				case "UIDNEXT":
					mb.UIDNext = uint32(n)
				}
			}
			continue
		}
		if len(r.Fields) == 2 {
			if s, _ := str(r.Fields[1]); strings.EqualFold(s, "EXISTS") {
				n, _ := str(r.Fields[0])
				mb.Exists, _ = strconv.Atoi(n)
			}
		}
	}
	return mb, nil
}

// Criteria select messages for Search; the zero value matches all.
type Criteria struct {
	// Unseen matches messages without \Seen.
	Unseen bool
	// Since matches messages whose internal date is on or after this day
	// (IMAP compares dates only, in the server's time zone).
	Since time.Time
}

func (cr Criteria) String() string {
	var parts []string
	if cr.Unseen {
		parts = append(parts, "UNSEEN")
	}
	if !cr.Since.IsZero() {
		parts = append(parts, "SINCE "+cr.Since.Format("2-Jan-2006"))
	}
	if len(parts) == 0 {
		return "ALL"
	}
	return strings.Join(parts, " ")
}

// Search returns the UIDs of the selected mailbox's messages that match,
// in ascending order as the server sent them.
func (c *Client) Search(ctx context.Context, cr Criteria) ([]uint32, error) {
	untagged, err := c.run(ctx, "UID SEARCH", "UID SEARCH "+cr.String(), nil)
	if err != nil {
		return nil, err
	}
	var uids []uint32
	for _, r := range untagged {
		if len(r.Fields) == 0 {
			continue
		}
		if s, _ := str(r.Fields[0]); !strings.EqualFold(s, "SEARCH") {
			continue
		}
		for _, v := range r.Fields[1:] {
			s, _ := str(v)
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil || n == 0 {
				return nil, &Error{Command: "UID SEARCH", Text: fmt.Sprintf("the server answered %q where a UID belongs", s)}
			}
			uids = append(uids, uint32(n))
		}
	}
	return uids, nil
}

// uidSet renders UIDs as a sequence set ("3,5,9").
func uidSet(uids []uint32) string {
	parts := make([]string, len(uids))
	for i, u := range uids {
		parts[i] = strconv.FormatUint(uint64(u), 10)
	}
	return strings.Join(parts, ",")
}
