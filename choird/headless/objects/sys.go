package objects

import (
	"errors"
	"os"
	"syscall"
)

// noFollow refuses to open a symbolic link where an object should be.
const noFollow = syscall.O_NOFOLLOW

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// syncDir fsyncs a directory, so that a rename or create in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
