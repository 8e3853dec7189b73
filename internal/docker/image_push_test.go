package docker

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A push stream as Engine 20.10 sends it to a loopback registry.
const pushStream = `{"status":"The push refers to repository [127.0.0.1:5000/x/bb]"}
{"status":"Preparing","progressDetail":{},"id":"de14d8c3ff4f"}
{"status":"Mounted from choir-test/busybox","progressDetail":{},"id":"de14d8c3ff4f"}
{"status":"t1: digest: sha256:1606374aa87d3c57f758ac83f430074980d577e746542754cd698b165945698f size: 528"}
{"progressDetail":{},"aux":{"Tag":"t1","Digest":"sha256:1606374aa87d3c57f758ac83f430074980d577e746542754cd698b165945698f","Size":528}}
`

func TestImagePushDigest(t *testing.T) {
	var method, path, tag, auth string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, tag, auth = r.Method, r.URL.Path, r.URL.Query().Get("tag"), r.Header.Get("X-Registry-Auth")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, pushStream)
	})
	var seen int
	res, err := c.ImagePush(context.Background(), "127.0.0.1:5000/x/bb:t1", RegistryAuth{ServerAddress: "127.0.0.1:5000"}, func(JSONMessage) { seen++ })
	if err != nil {
		t.Fatalf("ImagePush = %v", err)
	}
	want := PushResult{Tag: "t1", Digest: "sha256:1606374aa87d3c57f758ac83f430074980d577e746542754cd698b165945698f", Size: 528}
	if res != want || seen != 5 {
		t.Errorf("ImagePush = %+v after %d messages; want %+v after 5", res, seen, want)
	}
	if method != "POST" || path != "/v1.41/images/127.0.0.1:5000/x/bb/push" || tag != "t1" {
		t.Errorf("request = %s %s?tag=%s; want POST /v1.41/images/127.0.0.1:5000/x/bb/push?tag=t1", method, path, tag)
	}
	dec, err := base64.URLEncoding.DecodeString(auth)
	if err != nil || !sameJSON(t, dec, `{"serveraddress":"127.0.0.1:5000"}`) {
		t.Errorf("X-Registry-Auth = %q (%s, %v); want base64url of {serveraddress}", auth, dec, err)
	}
}

// TestImagePushDigestFromStatus: without the aux message, the status line
// that names the digest still gives it.
func TestImagePushDigestFromStatus(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Join(strings.Split(pushStream, "\n")[:4], "\n"))
	})
	res, err := c.ImagePush(context.Background(), "127.0.0.1:5000/x/bb:t1", RegistryAuth{}, nil)
	if err != nil || res.Digest != "sha256:1606374aa87d3c57f758ac83f430074980d577e746542754cd698b165945698f" || res.Size != 528 || res.Tag != "t1" {
		t.Errorf("ImagePush = %+v, %v; want the digest of the status line", res, err)
	}
}

func TestImagePushStreamError(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("tag") != "latest" {
			t.Errorf("tag = %q; want latest for a name without one", r.URL.Query().Get("tag"))
		}
		if r.Header.Get("X-Registry-Auth") != base64.URLEncoding.EncodeToString([]byte("{}")) {
			t.Errorf("X-Registry-Auth = %q; want {} encoded (the engine refuses a push without the header)", r.Header.Get("X-Registry-Auth"))
		}
		io.WriteString(w, `{"status":"The push refers to repository [127.0.0.1:5999/x/bb]"}
{"errorDetail":{"message":"Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused"},"error":"Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused"}
`)
	})
	_, err := c.ImagePush(context.Background(), "127.0.0.1:5999/x/bb", RegistryAuth{}, nil)
	var se *StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "connection refused") {
		t.Fatalf("ImagePush = %v (%T); want a *StreamError with the engine's message", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "127.0.0.1:5999/x/bb:latest") {
		t.Errorf("Error() = %q; want the image named", msg)
	}
}

func TestImagePushNoDigest(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"The push refers to repository [r/x]"}`+"\n")
	})
	if _, err := c.ImagePush(context.Background(), "r/x:1", RegistryAuth{}, nil); err == nil || !strings.Contains(err.Error(), "without a digest") {
		t.Errorf("ImagePush = %v; want an error: no digest", err)
	}
	if _, err := c.ImagePush(context.Background(), "r/x@sha256:1", RegistryAuth{}, nil); err == nil {
		t.Errorf("ImagePush of a digest = nil; want a refusal")
	}
}

func TestRegistryAuthStringRedacts(t *testing.T) {
	s := RegistryAuth{Username: "u", Password: "hunter2", ServerAddress: "r:5000"}.String()
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "redacted") {
		t.Errorf("String() = %q; want the password redacted", s)
	}
}

func TestDistributionInspect(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Registry-Auth") == "" {
			t.Errorf("no X-Registry-Auth")
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1.41/distribution/127.0.0.1:5000/x/bb:t1/json":
			io.WriteString(w, `{"Descriptor":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":"sha256:1606","size":528},"Platforms":[{"architecture":"amd64","os":"linux"}]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"manifest unknown: manifest unknown"}`)
		}
	})
	d, err := c.DistributionInspect(context.Background(), "127.0.0.1:5000/x/bb:t1", RegistryAuth{})
	if err != nil {
		t.Fatalf("DistributionInspect = %v", err)
	}
	if d.Descriptor.Digest != "sha256:1606" || d.Descriptor.Size != 528 || d.Descriptor.MediaType == "" ||
		len(d.Platforms) != 1 || d.Platforms[0].Architecture != "amd64" || d.Platforms[0].OS != "linux" {
		t.Errorf("DistributionInspect = %+v; want the descriptor and platform", d)
	}
	if _, err := c.DistributionInspect(context.Background(), "127.0.0.1:5000/x/nope:t1", RegistryAuth{}); !IsNotFound(err) {
		t.Errorf("DistributionInspect(nope) = %v; want not found", err)
	}
}
