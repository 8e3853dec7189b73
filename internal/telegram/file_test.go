package telegram_test

import (
	"bytes"
	"errors"
	"testing"

	"choir/internal/telegram"
)

func TestGetFileAndDownload(t *testing.T) {
	data := bytes.Repeat([]byte("# notes\n"), 50000)
	s, bot, c := newBot(t)
	s.InjectDocument(bot, user, "notes.md", data, "")
	d := updates(t, c, 0)[0].Message.Document
	f, err := c.GetFile(t.Context(), d.FileID)
	if err != nil {
		t.Fatalf("GetFile = %v", err)
	}
	if f.FileID != d.FileID || f.FilePath == "" || f.FileSize != int64(len(data)) {
		t.Errorf("GetFile = %+v", f)
	}
	var buf bytes.Buffer
	n, err := c.Download(t.Context(), f, &buf, 0)
	if err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("Download = %d, %v (intact %v); want %d bytes", n, err, bytes.Equal(buf.Bytes(), data), len(data))
	}

	// Over the limit, with the size known: refused before downloading.
	_, err = c.Download(t.Context(), f, &bytes.Buffer{}, 1000)
	if !errors.Is(err, telegram.ErrFileTooLarge) {
		t.Errorf("Download(limit 1000) = %v; want ErrFileTooLarge", err)
	}
	if n := s.CallCount(bot, "download"); n != 1 {
		t.Errorf("%d downloads; want only the first", n)
	}
	// Size unknown: refused once the limit is passed.
	unknown := *f
	unknown.FileSize = 0
	_, err = c.Download(t.Context(), &unknown, &bytes.Buffer{}, 1000)
	if !errors.Is(err, telegram.ErrFileTooLarge) {
		t.Errorf("Download(size unknown, limit 1000) = %v; want ErrFileTooLarge", err)
	}
	noToken(t, err)
}

func TestFileErrors(t *testing.T) {
	_, _, c := newBot(t)
	_, err := c.GetFile(t.Context(), "no-such-file")
	if e := apiError(t, err, 400); e.Description != "Bad Request: invalid file_id" {
		t.Errorf("GetFile(unknown) = %v", err)
	}
	_, err = c.Download(t.Context(), &telegram.File{FileID: "x", FilePath: "documents/nope.txt"}, &bytes.Buffer{}, 0)
	apiError(t, err, 404)
	if _, err := c.Download(t.Context(), &telegram.File{FileID: "x"}, &bytes.Buffer{}, 0); err == nil {
		t.Error("Download without a file_path = nil; want an error")
	}
}
