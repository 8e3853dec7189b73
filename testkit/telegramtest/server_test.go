package telegramtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"choir/testkit/telegramtest"
)

const token = "4242:FAKE-token"

// answer is the Bot API envelope, decoded loosely.
type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
	status int
}

func decode(t *testing.T, resp *http.Response, err error) answer {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("HTTP %d answer is not JSON: %q", resp.StatusCode, body)
	}
	a.status = resp.StatusCode
	return a
}

func postJSON(t *testing.T, s *telegramtest.Server, method, body string) answer {
	t.Helper()
	resp, err := http.Post(s.URL()+"/bot"+token+"/"+method, "application/json", strings.NewReader(body))
	return decode(t, resp, err)
}

func postForm(t *testing.T, s *telegramtest.Server, method string, v url.Values) answer {
	t.Helper()
	resp, err := http.PostForm(s.URL()+"/bot"+token+"/"+method, v)
	return decode(t, resp, err)
}

func get(t *testing.T, s *telegramtest.Server, method string, v url.Values) answer {
	t.Helper()
	resp, err := http.Get(s.URL() + "/bot" + token + "/" + method + "?" + v.Encode())
	return decode(t, resp, err)
}

func (a answer) mustOK(t *testing.T) answer {
	t.Helper()
	if !a.OK || a.status != 200 {
		t.Fatalf("answer = HTTP %d %d %q; want ok", a.status, a.ErrorCode, a.Description)
	}
	return a
}

func (a answer) mustFail(t *testing.T, code int, desc string) {
	t.Helper()
	if a.OK || a.status != code || a.ErrorCode != code || !strings.Contains(a.Description, desc) {
		t.Errorf("answer = HTTP %d ok=%v %d %q; want %d %q", a.status, a.OK, a.ErrorCode, a.Description, code, desc)
	}
}

func newServer(t *testing.T) (*telegramtest.Server, telegramtest.BotID) {
	s := telegramtest.New(t)
	return s, s.AddBot(token, "fake_bot")
}

func TestRouting(t *testing.T) {
	s, bot := newServer(t)
	if bot != 4242 {
		t.Errorf("AddBot = %d; want the token's prefix 4242", bot)
	}
	resp, err := http.Get(s.URL() + "/bot999:nope/getMe")
	decode(t, resp, err).mustFail(t, 401, "Unauthorized")
	postJSON(t, s, "noSuchMethod", `{}`).mustFail(t, 404, "Not Found")
	var me struct {
		ID       int64  `json:"id"`
		IsBot    bool   `json:"is_bot"`
		Username string `json:"username"`
	}
	// Method names are case-insensitive, as in the real API.
	if err := json.Unmarshal(get(t, s, "GETME", nil).mustOK(t).Result, &me); err != nil || me.ID != 4242 || !me.IsBot || me.Username != "fake_bot" {
		t.Errorf("getMe = %+v, %v", me, err)
	}
	if n := s.CallCount(bot, "getMe"); n != 1 {
		t.Errorf("CallCount(getMe) = %d; want 1", n)
	}
}

// TestEncodings sends the same message as JSON, as a form and in the query
// string, with the keyboard as a JSON object or as JSON text.
func TestEncodings(t *testing.T) {
	s, bot := newServer(t)
	kb := `{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}`
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"json","reply_markup":`+kb+`}`).mustOK(t)
	postJSON(t, s, "sendMessage", fmt.Sprintf(`{"chat_id":"7","text":"json text","reply_markup":%q}`, kb)).mustOK(t)
	postForm(t, s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"form"}, "reply_markup": {kb}}).mustOK(t)
	get(t, s, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"query"}, "reply_markup": {kb}}).mustOK(t)
	sent := s.Sent(bot, 7)
	if len(sent) != 4 {
		t.Fatalf("sent %d; want 4", len(sent))
	}
	for i, want := range []string{"json", "json text", "form", "query"} {
		if sent[i].Text != want || len(sent[i].Keyboard) != 1 || sent[i].Keyboard[0][0] != (telegramtest.Button{Text: "Yes", CallbackData: "y"}) {
			t.Errorf("sent[%d] = %+v; want %q with the keyboard", i, sent[i], want)
		}
	}
}

func TestSendMessageRules(t *testing.T) {
	s, bot := newServer(t)
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"`+strings.Repeat("a", 4097)+`"}`).mustFail(t, 400, "Bad Request: message is too long")
	// 2048 emoji are 4096 UTF-16 code units: allowed; one more is not.
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"`+strings.Repeat("😀", 2048)+`"}`).mustOK(t)
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"`+strings.Repeat("😀", 2049)+`"}`).mustFail(t, 400, "message is too long")
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"  "}`).mustFail(t, 400, "message text is empty")
	postJSON(t, s, "sendMessage", `{"text":"x"}`).mustFail(t, 400, "chat_id is empty")
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"x","reply_markup":{"inline_keyboard":[[{"text":"a","callback_data":"`+strings.Repeat("d", 65)+`"}]]}}`).mustFail(t, 400, "BUTTON_DATA_INVALID")
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"x","reply_parameters":{"message_id":99}}`).mustFail(t, 400, "message to be replied not found")
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"x","reply_to_message_id":99,"allow_sending_without_reply":true}`).mustOK(t)
	if got := s.Texts(bot, 7); len(got) != 2 {
		t.Errorf("texts = %d; want only the 2 accepted", len(got))
	}
}

func TestGetUpdatesSemantics(t *testing.T) {
	s, bot := newServer(t)
	for i := range 5 {
		s.InjectText(bot, 7, fmt.Sprint("m", i))
	}
	ids := func(a answer) []int64 {
		var ups []struct {
			UpdateID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(a.mustOK(t).Result, &ups); err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, u := range ups {
			out = append(out, u.UpdateID)
		}
		return out
	}
	all := ids(postJSON(t, s, "getUpdates", `{}`))
	if len(all) != 5 {
		t.Fatalf("getUpdates = %v; want 5", all)
	}
	if got := ids(postJSON(t, s, "getUpdates", `{"limit":2}`)); len(got) != 2 || got[0] != all[0] {
		t.Errorf("limit 2 = %v", got)
	}
	if got := ids(postJSON(t, s, "getUpdates", fmt.Sprintf(`{"offset":%d}`, all[2]))); len(got) != 3 || got[0] != all[2] {
		t.Errorf("offset = %v; want the last 3", got)
	}
	if got := ids(postJSON(t, s, "getUpdates", `{"offset":-1}`)); len(got) != 1 || got[0] != all[4] {
		t.Errorf("offset -1 = %v; want only the last", got)
	}
	if s.Unconfirmed(bot) != 1 {
		t.Errorf("unconfirmed = %d; want 1 after offset -1", s.Unconfirmed(bot))
	}
	postJSON(t, s, "getUpdates", `{"limit":"zzz"}`).mustFail(t, 400, "Integer")
}

// TestNewerPollWins: a second long poll on the token ends the first with
// 409; the second gets the next update.
func TestNewerPollWins(t *testing.T) {
	s, bot := newServer(t)
	first := make(chan answer, 1)
	go func() { first <- postJSON(t, s, "getUpdates", `{"timeout":30}`) }()
	s.WaitPolling(t, bot)
	second := make(chan answer, 1)
	go func() { second <- postJSON(t, s, "getUpdates", `{"timeout":30}`) }()
	(<-first).mustFail(t, 409, "terminated by other getUpdates request")
	s.WaitPolling(t, bot)
	s.InjectText(bot, 7, "hi")
	var ups []map[string]any
	if err := json.Unmarshal((<-second).mustOK(t).Result, &ups); err != nil || len(ups) != 1 {
		t.Errorf("second poll = %v, %v; want the update", ups, err)
	}
}

func TestShortPollTimesOut(t *testing.T) {
	s, _ := newServer(t)
	s.SetLongPollSecond(time.Millisecond)
	var ups []any
	if err := json.Unmarshal(postJSON(t, s, "getUpdates", `{"timeout":2}`).mustOK(t).Result, &ups); err != nil || len(ups) != 0 {
		t.Errorf("idle poll = %v, %v; want []", ups, err)
	}
}

func TestFaults(t *testing.T) {
	s, bot := newServer(t)
	s.FailNext(bot, "sendMessage", 2, telegramtest.TooManyRequests(3))
	s.FailNext(bot, "sendMessage", 1, telegramtest.ProxyError(502))
	for range 2 {
		a := postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"x"}`)
		a.mustFail(t, 429, "Too Many Requests: retry after 3")
		if a.Parameters.RetryAfter != 3 {
			t.Errorf("retry_after = %d; want 3", a.Parameters.RetryAfter)
		}
	}
	resp, err := http.Post(s.URL()+"/bot"+token+"/sendMessage", "application/json", strings.NewReader(`{"chat_id":7,"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(body), "<html>") {
		t.Errorf("proxy fault = HTTP %d %q", resp.StatusCode, body)
	}
	postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"x"}`).mustOK(t)
	calls := s.Calls(bot)
	if len(calls) != 4 || calls[0].Status != 429 || calls[2].Status != 502 || calls[3].Status != 200 {
		t.Errorf("calls = %+v", calls)
	}
}

func TestUploadAndDownload(t *testing.T) {
	s, bot := newServer(t)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("chat_id", "7")
	_ = mw.WriteField("caption", "the log")
	part, _ := mw.CreateFormFile("document", "build.log")
	_, _ = part.Write([]byte("line 1\nline 2\n"))
	_ = mw.Close()
	resp, err := http.Post(s.URL()+"/bot"+token+"/sendDocument", mw.FormDataContentType(), &body)
	var msg struct {
		Document struct {
			FileID   string `json:"file_id"`
			FileName string `json:"file_name"`
			FileSize int    `json:"file_size"`
		} `json:"document"`
		Caption string `json:"caption"`
	}
	if err := json.Unmarshal(decode(t, resp, err).mustOK(t).Result, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Document.FileName != "build.log" || msg.Document.FileSize != 14 || msg.Caption != "the log" {
		t.Errorf("message = %+v", msg)
	}
	files := s.Files(bot, 7)
	if len(files) != 1 || string(files[0].Data) != "line 1\nline 2\n" || files[0].Field != "document" {
		t.Errorf("files = %+v", files)
	}
	// Resend by file_id, then fetch the file.
	postJSON(t, s, "sendDocument", fmt.Sprintf(`{"chat_id":8,"document":%q}`, msg.Document.FileID)).mustOK(t)
	var f struct {
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(postJSON(t, s, "getFile", fmt.Sprintf(`{"file_id":%q}`, msg.Document.FileID)).mustOK(t).Result, &f); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(s.URL() + "/file/bot" + token + "/" + f.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(data) != "line 1\nline 2\n" {
		t.Errorf("download = HTTP %d %q", resp.StatusCode, data)
	}
	resp, err = http.Get(s.URL() + "/file/bot" + token + "/documents/nope")
	decode(t, resp, err).mustFail(t, 404, "Not Found")
	postJSON(t, s, "sendDocument", `{"chat_id":7}`).mustFail(t, 400, "there is no document in the request")
}

func TestCommandsAndCallbacks(t *testing.T) {
	s, bot := newServer(t)
	postForm(t, s, "setMyCommands", url.Values{
		"commands": {`[{"command":"status","description":"Status"}]`},
		"scope":    {`{"type":"chat","chat_id":7}`},
	}).mustOK(t)
	if got, set := s.Commands(bot, telegramtest.ChatScope(7)); !set || len(got) != 1 || got[0].Command != "status" {
		t.Errorf("chat 7 menu = %v, %v", got, set)
	}
	if _, set := s.Commands(bot, telegramtest.DefaultScope); set {
		t.Error("default menu set by a chat-scoped call")
	}
	postJSON(t, s, "setMyCommands", `{"commands":[],"scope":{"type":"chat"}}`).mustFail(t, 400, "chat_id is empty")

	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	a := postJSON(t, s, "sendMessage", `{"chat_id":7,"text":"ok?","reply_markup":{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}}`)
	if err := json.Unmarshal(a.mustOK(t).Result, &sent); err != nil {
		t.Fatal(err)
	}
	qid := s.InjectCallback(bot, 7, sent.MessageID, "y")
	postJSON(t, s, "answerCallbackQuery", fmt.Sprintf(`{"callback_query_id":%q,"text":"done","show_alert":true}`, qid)).mustOK(t)
	postJSON(t, s, "answerCallbackQuery", fmt.Sprintf(`{"callback_query_id":%q}`, qid)).mustFail(t, 400, "query is too old")
	if got := s.Answers(bot); len(got) != 1 || !got[0].ShowAlert || got[0].Data != "y" {
		t.Errorf("answers = %+v", got)
	}
	postJSON(t, s, "editMessageText", fmt.Sprintf(`{"chat_id":7,"message_id":%d,"text":"ok?","reply_markup":{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}}`, sent.MessageID)).mustFail(t, 400, "message is not modified")
	postJSON(t, s, "editMessageText", fmt.Sprintf(`{"chat_id":7,"message_id":%d,"text":"done"}`, sent.MessageID)).mustOK(t)
	if m, _ := s.Message(bot, 7, sent.MessageID); m.Text != "done" || m.Keyboard != nil || !m.Edited {
		t.Errorf("message after edit = %+v", m)
	}
}

// TestHangReleasesOnClientCancel: a hanging call is in flight until the
// client gives up.
func TestHangReleasesOnClientCancel(t *testing.T) {
	s, bot := newServer(t)
	s.FailNext(bot, "getUpdates", 1, telegramtest.Hang())
	client := &http.Client{Timeout: 50 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		resp, err := client.Post(s.URL()+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	if err := <-done; err == nil {
		t.Fatal("hanging getUpdates answered")
	}
	s.Wait(t, "the hung call to end", func() bool { return s.InFlight(bot, "getUpdates") == 0 })
	if calls := s.Calls(bot); len(calls) != 1 {
		t.Errorf("calls = %+v", calls)
	}
}

// upload posts one file as field of method, multipart.
func upload(t *testing.T, s *telegramtest.Server, method, field, name string, data []byte) answer {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("chat_id", "7")
	part, _ := mw.CreateFormFile(field, name)
	_, _ = part.Write(data)
	_ = mw.Close()
	resp, err := http.Post(s.URL()+"/bot"+token+"/"+method, mw.FormDataContentType(), &body)
	return decode(t, resp, err)
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPhotoLimits(t *testing.T) {
	s, bot := newServer(t)
	upload(t, s, "sendPhoto", "photo", "ok.png", pngOf(t, 300, 200)).mustOK(t)
	upload(t, s, "sendPhoto", "photo", "wide.png", pngOf(t, 2100, 100)).mustFail(t, 400, "PHOTO_INVALID_DIMENSIONS")
	upload(t, s, "sendPhoto", "photo", "tall.png", pngOf(t, 10, 201)).mustFail(t, 400, "PHOTO_INVALID_DIMENSIONS")
	upload(t, s, "sendPhoto", "photo", "huge.png", pngOf(t, 6000, 4001)).mustFail(t, 400, "PHOTO_INVALID_DIMENSIONS")
	upload(t, s, "sendPhoto", "photo", "fake.png", []byte("\x89PNG not really")).mustFail(t, 400, "IMAGE_PROCESS_FAILED")
	if n := len(s.Files(bot, 7)); n != 1 {
		t.Errorf("%d photos recorded; want only the valid one", n)
	}
}

func TestSendAudio(t *testing.T) {
	s, bot := newServer(t)
	var msg struct {
		Audio struct {
			FileName string `json:"file_name"`
			MimeType string `json:"mime_type"`
		} `json:"audio"`
	}
	if err := json.Unmarshal(upload(t, s, "sendAudio", "audio", "song.mp3", []byte("ID3 tune")).mustOK(t).Result, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Audio.FileName != "song.mp3" || msg.Audio.MimeType != "audio/mpeg" {
		t.Errorf("audio = %+v", msg.Audio)
	}
	if sent := s.Sent(bot, 7); len(sent) != 1 || sent[0].Method != "sendAudio" || sent[0].File.Field != "audio" {
		t.Errorf("sent = %+v", sent)
	}
}
