package mcpdecl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is where an agent image holds the merged declarations.
const Dir = "/choir/mcp"

// ReadFile reads and parses one declaration, held to MaxBytes and refusing
// anything but a regular file unread.
func ReadFile(file string) (*Decl, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return nil, &Error{Faults: []Fault{{File: file, Message: fmt.Sprintf("read: %v", err)}}}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Faults: []Fault{{File: file, Message: "not a regular file"}}}
	}
	if fi.Size() > MaxBytes {
		return nil, &Error{Faults: []Fault{{File: file, Message: fmt.Sprintf("%d bytes; a declaration is at most %d", fi.Size(), MaxBytes)}}}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{Faults: []Fault{{File: file, Message: fmt.Sprintf("read: %v", err)}}}
	}
	return Parse(file, data)
}

// LoadDir reads every <server>.json of dir (a missing dir holds none), in
// name order. Every fault of every file is in the error (an *Error).
func LoadDir(dir string) ([]*Decl, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Faults: []Fault{{File: dir, Message: fmt.Sprintf("read MCP declarations: %v", err)}}}
	}
	var out []*Decl
	var faults []Fault
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		d, err := ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			var de *Error
			if errors.As(err, &de) {
				faults = append(faults, de.Faults...)
				continue
			}
			return nil, err
		}
		out = append(out, d)
	}
	if len(faults) > 0 {
		return nil, &Error{Faults: faults}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
