package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Upload limits of the real API for bots.
const (
	maxUploadBytes = 50 << 20 // any file
	maxPhotoBytes  = 10 << 20 // a photo
	maxFetchBytes  = 20 << 20 // a file getFile hands out
	maxJSONBytes   = 1 << 20
)

// params are one request's parameters, however they came: a JSON body,
// a URL-encoded or multipart form, or the query string. A form carries
// objects (reply_markup, scope...) as JSON text; a JSON body carries them as
// JSON values, or as JSON text too.
type params struct {
	values map[string]string          // form and query values
	raw    map[string]json.RawMessage // JSON body members
	files  map[string]*upload         // multipart file parts, by field
}

type upload struct {
	name, contentType string
	data              []byte
}

// parseParams reads r's parameters; a non-zero reply.status is the error
// to answer with.
func parseParams(r *http.Request) (*params, reply) {
	p := &params{values: map[string]string{}, raw: map[string]json.RawMessage{}, files: map[string]*upload{}}
	for k, v := range r.URL.Query() {
		p.values[k] = v[0]
	}
	ctype := r.Header.Get("Content-Type")
	if ctype == "" {
		return p, reply{}
	}
	mt, mtParams, err := mime.ParseMediaType(ctype)
	if err != nil {
		return nil, badRequest("unsupported Content-Type %q", ctype)
	}
	switch mt {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBytes+1))
		if err != nil || len(body) > maxJSONBytes {
			return nil, badRequest("can't read request body")
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return p, reply{}
		}
		if err := json.Unmarshal(body, &p.raw); err != nil {
			return nil, badRequest("can't parse JSON object")
		}
	case "application/x-www-form-urlencoded":
		r.Body = http.MaxBytesReader(nil, r.Body, maxJSONBytes)
		if err := r.ParseForm(); err != nil {
			return nil, badRequest("can't parse form")
		}
		for k, v := range r.PostForm {
			p.values[k] = v[0]
		}
	case "multipart/form-data":
		if mtParams["boundary"] == "" {
			return nil, badRequest("multipart body has no boundary")
		}
		if rep := p.readMultipart(r); rep.status != 0 {
			return nil, rep
		}
	default:
		return nil, badRequest("unsupported Content-Type %q", mt)
	}
	return p, reply{}
}

func (p *params) readMultipart(r *http.Request) reply {
	mr, err := r.MultipartReader()
	if err != nil {
		return badRequest("can't parse multipart body: %v", err)
	}
	total := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return reply{}
		}
		if err != nil {
			return badRequest("can't parse multipart body: %v", err)
		}
		data, err := io.ReadAll(io.LimitReader(part, maxUploadBytes+1-int64(total)))
		if err != nil {
			return badRequest("can't read multipart part %q: %v", part.FormName(), err)
		}
		total += len(data)
		if total > maxUploadBytes {
			return fail(http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		}
		if part.FileName() != "" {
			p.files[part.FormName()] = &upload{name: part.FileName(), contentType: part.Header.Get("Content-Type"), data: data}
		} else {
			p.values[part.FormName()] = string(data)
		}
	}
}

func (p *params) has(name string) bool {
	_, inValues := p.values[name]
	_, inRaw := p.raw[name]
	return inValues || inRaw
}

// str reads a String parameter; a JSON number is taken as its text.
func (p *params) str(name string) (string, bool, *reply) {
	if raw, ok := p.raw[name]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, true, nil
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			return n.String(), true, nil
		}
		rep := badRequest("field %q must be of type String", name)
		return "", true, &rep
	}
	v, ok := p.values[name]
	return v, ok, nil
}

// int reads an Integer parameter, given as a number or a numeric string.
func (p *params) int(name string) (int64, bool, *reply) {
	s, present, rep := p.str(name)
	if rep != nil || !present {
		return 0, present, rep
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		rep := badRequest("field %q must be of type Integer", name)
		return 0, true, &rep
	}
	return n, true, nil
}

// bool reads a Boolean parameter.
func (p *params) bool(name string) (bool, *reply) {
	if raw, ok := p.raw[name]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err == nil {
			return b, nil
		}
	}
	s, _, rep := p.str(name)
	if rep != nil {
		return false, rep
	}
	switch strings.ToLower(s) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	r := badRequest("field %q must be of type Boolean", name)
	return false, &r
}

// object decodes a JSON-serialized parameter (an object or an array) into
// plain Go values, numbers as json.Number.
func (p *params) object(name string) (any, bool, *reply) {
	var text []byte
	if raw, ok := p.raw[name]; ok {
		text = raw
		var s string
		if json.Unmarshal(raw, &s) == nil { // sent as JSON text inside JSON
			text = []byte(s)
		}
	} else if v, ok := p.values[name]; ok {
		text = []byte(v)
	} else {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		rep := badRequest("can't parse %s JSON object", name)
		return nil, true, &rep
	}
	return v, true, nil
}

// chatID reads the required chat_id.
func (p *params) chatID() (int64, *reply) {
	id, present, rep := p.int("chat_id")
	if rep != nil {
		return 0, rep
	}
	if !present || id == 0 {
		r := badRequest("chat_id is empty")
		return 0, &r
	}
	return id, nil
}

// jsonInt reads an integer out of a decoded JSON value.
func jsonInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}
