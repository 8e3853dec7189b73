package telegram

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// MaxDownloadSize is the largest file the Bot API lets a bot download (20 MB).
const MaxDownloadSize = 20 << 20

type getFileParams struct {
	FileID string `json:"file_id"`
}

// GetFile asks for a file's download path. The file_id comes from a
// received Document, PhotoSize, Voice, Audio or Video.
func (c *Client) GetFile(ctx context.Context, fileID string) (*File, error) {
	var f File
	if err := c.call(ctx, "getFile", getFileParams{FileID: fileID}, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// Download copies the file f (from GetFile) to w and returns the bytes
// written. A file larger than maxBytes (<= 0 means MaxDownloadSize) is
// refused with an error wrapping ErrFileTooLarge: before any byte is read
// when its size is known, otherwise after maxBytes have been written to w.
// On any error w may hold part of the file.
func (c *Client) Download(ctx context.Context, f *File, w io.Writer, maxBytes int64) (int64, error) {
	const method = "download"
	if maxBytes <= 0 {
		maxBytes = MaxDownloadSize
	}
	if f == nil || f.FilePath == "" {
		return 0, fmt.Errorf("telegram %s: file has no file_path; call GetFile first", method)
	}
	if f.FileSize > maxBytes {
		return 0, fmt.Errorf("telegram %s: file %s is %d bytes, over the %d-byte limit: %w", method, f.FileID, f.FileSize, maxBytes, ErrFileTooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, c.transferTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/file/bot"+c.token+"/"+escapePath(f.FilePath), nil)
	if err != nil {
		return 0, c.transportError(method, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, c.transportError(method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The file server answers errors in the API's envelope.
		if err := c.decode(method, resp, nil); err != nil {
			return 0, err
		}
		return 0, &APIError{Method: method, Code: resp.StatusCode, HTTPStatus: resp.StatusCode, Description: "HTTP " + resp.Status}
	}
	if resp.ContentLength > maxBytes {
		return 0, fmt.Errorf("telegram %s: file %s is %d bytes, over the %d-byte limit: %w", method, f.FileID, resp.ContentLength, maxBytes, ErrFileTooLarge)
	}
	n, err := io.CopyN(w, resp.Body, maxBytes)
	if err == io.EOF {
		return n, nil
	}
	if err != nil {
		return n, c.transportError(method, fmt.Errorf("copy file %s: %w", f.FileID, err))
	}
	// maxBytes copied: anything more is too much.
	var one [1]byte
	if k, _ := io.ReadFull(resp.Body, one[:]); k > 0 {
		return n, fmt.Errorf("telegram %s: file %s exceeds the %d-byte limit: %w", method, f.FileID, maxBytes, ErrFileTooLarge)
	}
	return n, nil
}

// escapePath escapes each segment of a file_path, keeping its slashes.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
