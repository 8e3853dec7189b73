package logs

import (
	"context"
	"io"
	"os"
	"time"
)

// pollInterval is how often Follow looks for new lines.
const pollInterval = 200 * time.Millisecond

// Follow copies the log at path to w, then keeps copying lines as they are
// appended (like tail -f) until ctx ends. When the file is archived and
// emptied, Follow continues from its new beginning. flush, when not nil, is
// called after each copy so a network writer delivers promptly.
// Lines written between two polls while the file is archived twice in a row
// can be missed; at the default threshold that cannot happen.
func Follow(ctx context.Context, path string, w io.Writer, flush func()) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }() // f changes when the log is archived
	var off int64
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() < off {
			off = 0 // truncated: start over
		}
		if fi.Size() > off {
			n, err := io.Copy(w, io.NewSectionReader(f, off, fi.Size()-off))
			off += n
			if err != nil {
				return err
			}
			if flush != nil {
				flush()
			}
		}
		// Archived: the old file is drained above; go on with the new one.
		if cur, err := os.Stat(path); err == nil && !os.SameFile(fi, cur) {
			nf, err := os.Open(path)
			if err == nil {
				f.Close()
				f, off = nf, 0
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
