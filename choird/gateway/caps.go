package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// capRecv keeps .choirtmp/recv/ within maxFiles regular files and maxBytes
// (counting keep, the file just stored): it removes the oldest other
// regular files, by modification time then name, and returns their names.
// Entries that are not regular files (the agent's directories or
// symlinks) are neither counted nor touched; nothing is followed.
func capRecv(recv *os.Root, keep string, maxFiles int, maxBytes int64) ([]string, error) {
	dir, err := recv.Open(".")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", recvDir, err)
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", recvDir, err)
	}
	type file struct {
		name string
		info fs.FileInfo
	}
	var files []file
	var count int
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		count++
		total += info.Size()
		if e.Name() != keep {
			files = append(files, file{e.Name(), info})
		}
	}
	slices.SortFunc(files, func(a, b file) int {
		if c := a.info.ModTime().Compare(b.info.ModTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	var removed []string
	var errs []error
	for _, f := range files {
		if count <= maxFiles && total <= maxBytes {
			break
		}
		if err := recv.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s/%s: %w", recvDir, f.name, err))
			continue
		}
		count--
		total -= f.info.Size()
		removed = append(removed, recvDir+"/"+f.name)
	}
	return removed, errors.Join(errs...)
}
