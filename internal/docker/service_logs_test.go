package docker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
)

func TestServiceLogsDemux(t *testing.T) {
	var query url.Values
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1.41/services/svc1":
			io.WriteString(w, `{"ID":"svc1","Spec":{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":"b"}}}}`)
		case "/v1.41/services/svc1/logs":
			query = r.URL.Query()
			w.Header().Del("Content-Type") // 20.10 sends none
			w.Write(append(frame(1, "uid=65534\n"), frame(2, "warning\n")...))
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
	})
	s, err := c.ServiceLogs(context.Background(), "svc1", LogsOptions{Tail: "10"})
	if err != nil {
		t.Fatalf("ServiceLogs = %v", err)
	}
	defer s.Close()
	var out, errw bytes.Buffer
	if err := s.Copy(&out, &errw); err != nil {
		t.Fatalf("Copy = %v", err)
	}
	if out.String() != "uid=65534\n" || errw.String() != "warning\n" {
		t.Errorf("Copy = %q, %q; want the frames split into stdout and stderr", out.String(), errw.String())
	}
	if q := query; q.Get("stdout") != "1" || q.Get("stderr") != "1" || q.Get("tail") != "10" || q.Get("follow") != "" {
		t.Errorf("query = %v; want stdout=1 stderr=1 tail=10", query)
	}
}

func TestServiceLogsTTY(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1.41/services/svc1" {
			io.WriteString(w, `{"ID":"svc1","Spec":{"TaskTemplate":{"ContainerSpec":{"Image":"b","TTY":true}}}}`)
			return
		}
		io.WriteString(w, "raw output\n")
	})
	s, err := c.ServiceLogs(context.Background(), "svc1", LogsOptions{})
	if err != nil {
		t.Fatalf("ServiceLogs = %v", err)
	}
	defer s.Close()
	var out bytes.Buffer
	if err := s.Copy(&out, nil); err != nil || out.String() != "raw output\n" || !s.TTY {
		t.Errorf("Copy = %q, %v (TTY %v); want the raw stream", out.String(), err, s.TTY)
	}
}
