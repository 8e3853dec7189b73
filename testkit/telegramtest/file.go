package telegramtest

import (
	"net/http"
	"strconv"
	"strings"
)

func (s *Server) getFile(b *bot, p *params, _ *http.Request) reply {
	id, _, rep := p.str("file_id")
	if rep != nil {
		return *rep
	}
	s.mu.Lock()
	f := b.files[id]
	s.mu.Unlock()
	switch {
	case id == "":
		return badRequest("file_id is empty")
	case f == nil:
		return badRequest("invalid file_id")
	case len(f.data) > maxFetchBytes:
		return badRequest("file is too big")
	}
	return ok(map[string]any{"file_id": f.id, "file_unique_id": f.uniqueID, "file_size": len(f.data), "file_path": f.path})
}

// serveFile is GET /file/bot<token>/<file_path>. Faults scripted for the
// method "download" apply here.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	b := s.bots[token]
	s.mu.Unlock()
	if b == nil {
		writeReply(w, fail(http.StatusUnauthorized, "Unauthorized"))
		return
	}
	var data []byte
	rep := s.serve(b, "download", r, func() reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		f := b.paths[path]
		if f == nil || r.Method != http.MethodGet && r.Method != http.MethodHead {
			return fail(http.StatusNotFound, "Not Found")
		}
		data = f.data
		return ok(nil)
	})
	if rep.status != http.StatusOK {
		writeReply(w, rep)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}
