package telegram_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"
	"time"

	"choir/internal/telegram"
)

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// streamed hides any Len or Seek method, so the client cannot know the
// size in advance: the body must be streamed.
type streamed struct{ io.Reader }

func TestUploads(t *testing.T) {
	ogg := append([]byte("OggS\x00\x02"), make([]byte, 20)...) // an OGG page header, then OpusHead
	ogg = append(ogg, 1, 19)
	ogg = append(ogg, append([]byte("OpusHead\x01\x01\x38\x01\x80\xbb"), make([]byte, 5)...)...)
	ogg = append(ogg, bytes.Repeat([]byte{0x4f, 0x70}, 5000)...)
	photo := pngBytes(t, 64, 48)
	doc := bytes.Repeat([]byte("report line\n"), 100000) // 1.2 MB
	video := bytes.Repeat([]byte{0, 0, 0, 0x18, 'f', 't', 'y', 'p'}, 1000)
	for _, tc := range []struct {
		method, field, name string
		data                []byte
		send                func(c *telegram.Client, ctx context.Context, chat int64, name string, r io.Reader, opt telegram.MediaOptions) (*telegram.Message, error)
		check               func(t *testing.T, m *telegram.Message)
		contentType         string
	}{
		{
			method: "sendDocument", field: "document", name: "report.txt", data: doc, send: (*telegram.Client).SendDocument,
			contentType: "text/plain; charset=utf-8",
			check: func(t *testing.T, m *telegram.Message) {
				if m.Document == nil || m.Document.FileName != "report.txt" || m.Document.FileSize != int64(len(doc)) {
					t.Errorf("Document = %+v", m.Document)
				}
			},
		},
		{
			method: "sendPhoto", field: "photo", name: "chart.png", data: photo, send: (*telegram.Client).SendPhoto,
			contentType: "image/png",
			check: func(t *testing.T, m *telegram.Message) {
				if p := m.LargestPhoto(); p == nil || p.Width != 64 || p.Height != 48 {
					t.Errorf("LargestPhoto = %+v; want 64x48", p)
				}
			},
		},
		{
			method: "sendVoice", field: "voice", name: "reply.ogg", data: ogg, send: (*telegram.Client).SendVoice,
			contentType: "audio/ogg",
			check: func(t *testing.T, m *telegram.Message) {
				if m.Voice == nil || m.Voice.Duration != 3 || m.Voice.MimeType != "audio/ogg" {
					t.Errorf("Voice = %+v; want 3 s of audio/ogg", m.Voice)
				}
			},
		},
		{
			method: "sendAudio", field: "audio", name: "song.mp3", data: doc[:40000], send: (*telegram.Client).SendAudio,
			contentType: "audio/mpeg",
			check: func(t *testing.T, m *telegram.Message) {
				if m.Audio == nil || m.Audio.FileName != "song.mp3" || m.Audio.Duration != 3 || m.Audio.MimeType != "audio/mpeg" {
					t.Errorf("Audio = %+v; want song.mp3, 3 s of audio/mpeg", m.Audio)
				}
			},
		},
		{
			method: "sendVideo", field: "video", name: "clip.mp4", data: video, send: (*telegram.Client).SendVideo,
			contentType: "video/mp4",
			check: func(t *testing.T, m *telegram.Message) {
				if m.Video == nil || m.Video.FileName != "clip.mp4" || m.Video.Duration != 3 {
					t.Errorf("Video = %+v", m.Video)
				}
			},
		},
	} {
		t.Run(tc.method, func(t *testing.T) {
			s, bot, c := newBot(t)
			// Stream through a pipe, as from an encoder, not a buffer.
			pr, pw := io.Pipe()
			go func() {
				_, err := io.Copy(pw, bytes.NewReader(tc.data))
				pw.CloseWithError(err)
			}()
			m, err := tc.send(c, t.Context(), user, "/var/lib/choir/tmp/"+tc.name, streamed{pr}, telegram.MediaOptions{
				Caption: "here it is", Duration: 3 * time.Second,
				ReplyMarkup: telegram.Keyboard([]telegram.InlineKeyboardButton{telegram.CallbackButton("ok", "ok")}),
			})
			if err != nil {
				t.Fatalf("%s = %v", tc.method, err)
			}
			if m.Caption != "here it is" || m.ReplyMarkup == nil {
				t.Errorf("message = %+v; want the caption and keyboard", m)
			}
			tc.check(t, m)
			files := s.Files(bot, user)
			if len(files) != 1 {
				t.Fatalf("fake got %d files; want 1", len(files))
			}
			f := files[0]
			if f.Field != tc.field || f.Name != tc.name || !bytes.Equal(f.Data, tc.data) || f.ContentType != tc.contentType {
				t.Errorf("fake got %s %q (%s, %d bytes, intact %v); want %s %q (%s, %d bytes), without the host path",
					f.Field, f.Name, f.ContentType, len(f.Data), bytes.Equal(f.Data, tc.data), tc.field, tc.name, tc.contentType, len(tc.data))
			}
			if sent := s.Sent(bot, user); sent[0].Method != tc.method || sent[0].Caption != "here it is" {
				t.Errorf("fake saw %s with caption %q", sent[0].Method, sent[0].Caption)
			}
		})
	}
}

// failingReader gives some bytes, then fails.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("disk on fire")
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

// TestVoiceThatIsNotOpusShowsAsADocument: Telegram shows a voice upload
// that is not OGG Opus, MP3 or M4A as a document, as the fake does.
func TestVoiceThatIsNotOpusShowsAsADocument(t *testing.T) {
	_, _, c := newBot(t)
	m, err := c.SendVoice(t.Context(), user, "music.ogg", strings.NewReader("OggS\x00\x02 vorbis inside"), telegram.MediaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Voice != nil || m.Document == nil {
		t.Errorf("message = voice %+v, document %+v; want a document", m.Voice, m.Document)
	}
}

func TestUploadReportsReaderError(t *testing.T) {
	s, bot, c := newBot(t)
	_, err := c.SendDocument(t.Context(), user, "big.bin", &failingReader{n: 100000}, telegram.MediaOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "big.bin") {
		t.Fatalf("SendDocument from a failing reader = %v; want the reader's error and the file name", err)
	}
	noToken(t, err)
	if n := len(s.Sent(bot, user)); n != 0 {
		t.Errorf("fake recorded %d messages from a broken upload", n)
	}
}

func TestUploadByFileIDIsRefusedWithoutContent(t *testing.T) {
	_, _, c := newBot(t)
	if _, err := c.SendDocument(t.Context(), user, "x", nil, telegram.MediaOptions{}); err == nil {
		t.Error("SendDocument(nil reader) = nil; want an error")
	}
}
