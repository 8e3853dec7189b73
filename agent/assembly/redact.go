package assembly

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"choir/agent/redact"
)

// modelHTTP is the HTTP client of model calls: every request body is
// redacted before it leaves, whatever built it (the last guard; the prompt
// is rebuilt from the arbiter's log, which is redacted already).
func (rt *Runtime) modelHTTP() *http.Client {
	return &http.Client{Transport: redactBody{base: http.DefaultTransport, r: rt.sess.Redactor}}
}

type redactBody struct {
	base http.RoundTripper
	r    *redact.Redactor
}

func (t redactBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the model request: %w", err)
	}
	body = t.r.JSON(body)
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(out)
}

// maxRedactedFile bounds the staged text files whose content is redacted.
const maxRedactedFile = 8 << 20

// redactStaged keeps secret values out of a file staged for the DM and
// returns its name: a name holding one is renamed with the marker, and a
// text file (valid UTF-8 without NUL, at most maxRedactedFile) holding one
// is rewritten redacted, atomically. Binary files are sent as they are.
// Failures leave the file as it was, logged.
func (rt *Runtime) redactStaged(dir, name string) string {
	r := rt.redactor()
	if r.Len() == 0 {
		return name
	}
	if r.Contains(name) {
		clean := strings.ReplaceAll(r.String(name), "/", "_")
		target := clean
		for n := 2; ; n++ {
			if _, err := os.Lstat(filepath.Join(dir, target)); os.IsNotExist(err) {
				break
			}
			target = clean + "." + strconv.Itoa(n)
		}
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, target)); err != nil {
			rt.log.Warn("could not rename a staged file whose name holds a secret; it is not sent", "file", name, "error", err.Error())
			return name
		}
		rt.log.Warn("a staged file's name held a secret value; renamed", "file", target)
		name = target
	}
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxRedactedFile {
		return name
	}
	data, err := os.ReadFile(p)
	if err != nil || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 || !r.ContainsBytes(data) {
		return name
	}
	tmp, err := os.CreateTemp(filepath.Dir(dir), ".redact-*") // not in send/, where it would be listed
	if err == nil {
		_, err = tmp.Write(r.Bytes(data))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), fi.Mode().Perm())
		}
		if err == nil {
			err = os.Rename(tmp.Name(), p)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		rt.log.Warn("could not redact a staged file", "file", name, "error", err.Error())
	}
	return name
}

// redactor is the session's Redactor (nil, redacting nothing, without one).
func (rt *Runtime) redactor() *redact.Redactor {
	if rt.sess == nil {
		return nil
	}
	return rt.sess.Redactor
}
