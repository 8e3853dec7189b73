package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"choir/internal/jsonlimit"
)

// Size limits of the two files. Both are read whole into memory; config.json
// describes the resources (an agent with its own workspace, identity and
// DM takes about 570 bytes indented, so 10,000 agents take 5.6 MiB and the
// cap holds about 28,000) and secrets.json holds values of at most
// MaxSecretValueBytes each.
const (
	MaxConfigBytes      = 16 << 20
	MaxSecretsBytes     = 16 << 20
	MaxSecretValueBytes = 1 << 20
)

// MaxDepth is how deeply objects and arrays may nest in either file; neither
// needs more than 6 levels.
const MaxDepth = jsonlimit.DefaultMaxDepth

// ReadConfig reads config.json from home, refusing a file that is not a
// regular file, that group or others may write (whoever can write it can
// hand an agent any directory of the host as its workspace), that belongs to
// a user other than choird's or root (its owner could make it writable
// again), or that is larger than MaxConfigBytes. The refusals are Problems
// that print the command fixing them.
func ReadConfig(home Home) ([]byte, error) {
	data, err := readConfigFile(home)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// readConfigFile is ReadConfig, returning the content along with problems
// of mode or owner (see readChecked).
func readConfigFile(home Home) ([]byte, error) {
	return readChecked(home.ConfigPath(), ConfigFile, MaxConfigBytes, configFileProblems)
}

// readSecretsFile reads secrets.json from home, refusing a file that is not
// a regular file, not mode 0600 or not owned by choird's user, or larger
// than MaxSecretsBytes.
func readSecretsFile(home Home) ([]byte, error) {
	return readChecked(home.SecretsPath(), SecretsFile, MaxSecretsBytes, secretsFileProblems)
}

// readChecked opens path, checks what the open descriptor refers to (so the
// file checked is the file read, even if the name is replaced meanwhile) and
// reads at most max bytes of it. O_NONBLOCK keeps a FIFO put in the file's
// place from blocking the open; it is refused as not a regular file. When
// the only problems are the file's mode or owner, the content is returned
// with them (as Problems), so that `choird --check` can report the
// content's problems too; callers must not use it.
func readChecked(path, file string, max int64, check func(path string, fi fs.FileInfo) Problems) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Problems{{File: file, Message: fmt.Sprintf("%s does not exist: run `choirctl init` to create it", path)}}
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, Problems{{File: file, Message: fmt.Sprintf("%s is not a regular file (%v): replace it with a plain file", path, fi.Mode().Type())}}
	}
	if fi.Size() > max {
		return nil, Problems{{File: file, Message: fmt.Sprintf("%s is %d bytes, over the limit of %d MiB for this file", path, fi.Size(), max>>20)}}
	}
	data, err := jsonlimit.ReadAll(f, jsonlimit.Limits{MaxBytes: max, MaxDepth: MaxDepth})
	if err != nil {
		var le *jsonlimit.Error
		if errors.As(err, &le) {
			return nil, Problems{{File: file, Message: limitMessage(file, le)}}
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, check(path, fi).Err()
}

// limitMessage words a jsonlimit refusal of one of the two files. It never
// shows a byte of secrets.json.
func limitMessage(file string, e *jsonlimit.Error) string {
	if file == SecretsFile && errors.Is(e, jsonlimit.ErrInvalidUTF8) {
		return fmt.Sprintf("line %d:%d (byte %d): not valid UTF-8 (value not shown): JSON text must be UTF-8; fix the value in an editor, or delete and set it again", e.Line, e.Col, e.Offset)
	}
	return e.Error()
}

func configFileProblems(path string, fi fs.FileInfo) Problems {
	var ps Problems
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		ps.add(ConfigFile, "", "", "%s has mode %#o, so group or others can change it (and give an agent any directory of the host): run `chmod go-w %s`", path, perm, path)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() && uid != 0 {
		ps.add(ConfigFile, "", "", "%s is owned by uid %d, who could make it writable again; only choird's user (uid %d) or root may own it: run `chown %d %s`", path, uid, os.Getuid(), os.Getuid(), path)
	}
	return ps
}

func secretsFileProblems(path string, fi fs.FileInfo) Problems {
	var ps Problems
	if mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); mode != 0o600 {
		why := "it must be 0600 (read and write for its owner only)"
		if mode.Perm()&0o077 != 0 {
			why = "so group or others can reach it; it must be 0600"
		}
		ps.add(SecretsFile, "", "", "%s has mode %#o, %s: run `chmod 600 %s`", path, octal(mode), why, path)
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() {
		ps.add(SecretsFile, "", "", "%s is owned by uid %d, not by choird's user (uid %d), who alone may hold it: run `chown %d %s` (as root)", path, uid, os.Getuid(), os.Getuid(), path)
	}
	return ps
}

// octal is a file mode as chmod writes it.
func octal(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	for bit, v := range map[fs.FileMode]uint32{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if m&bit != 0 {
			o |= v
		}
	}
	return o
}

func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
