package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// sameJSON reports whether got and want hold the same JSON value, both
// decoded as generic values (so the comparison does not go through the
// client's struct tags).
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the client sent invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// TestServiceCreateWireFormat: the body is the Engine API's ServiceSpec,
// field for field as API 1.41 names them.
func TestServiceCreateWireFormat(t *testing.T) {
	var body []byte
	var path, auth string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		path, auth = r.URL.Path, r.Header.Get("X-Registry-Auth")
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"ID":"svc1","Warnings":["image is not pinned"]}`)
	})
	one, grace := uint64(1), 5*time.Second
	res, err := c.ServiceCreate(context.Background(), ServiceSpec{
		Name:   "choir-alice",
		Labels: map[string]string{"choir.agent": "alice"},
		TaskTemplate: TaskSpec{
			ContainerSpec: &ContainerSpec{
				Image:           "127.0.0.1:5000/choir/alice@sha256:abc",
				Command:         []string{"/usr/local/bin/choir-agent"},
				Args:            []string{"--serve"},
				Env:             []string{"CHOIR_AGENT=alice"},
				User:            "1000:1000",
				ReadOnly:        true,
				StopGracePeriod: &grace,
				CapabilityDrop:  []string{"ALL"},
				Mounts:          []Mount{{Type: MountTmpfs, Target: "/tmp", TmpfsOptions: &TmpfsOptions{SizeBytes: 64 << 20}}},
				Secrets: []SecretReference{{
					SecretID: "sec1", SecretName: "choir-alice-boot",
					File: &SecretFile{Name: "choir-boot", UID: "1000", GID: "1000", Mode: 0o400},
				}},
			},
			Resources:     &ResourceRequirements{Limits: &Limit{MemoryBytes: 512 << 20, Pids: 256}},
			RestartPolicy: &RestartPolicy{Condition: RestartNone},
			Placement:     &Placement{Constraints: []string{"node.labels.choir.node==worker"}},
			Networks:      []NetworkAttachmentConfig{{Target: "host"}},
		},
		Mode: ServiceMode{Replicated: &ReplicatedService{Replicas: &one}},
	}, &RegistryAuth{Username: "choir", Password: "pw", ServerAddress: "127.0.0.1:5000"})
	if err != nil {
		t.Fatalf("ServiceCreate = %v", err)
	}
	if res.ID != "svc1" || len(res.Warnings) != 1 {
		t.Errorf("ServiceCreate = %+v; want ID svc1 and the warning", res)
	}
	if path != "/v1.41/services/create" {
		t.Errorf("path = %s; want /v1.41/services/create", path)
	}
	want := `{
		"Name": "choir-alice",
		"Labels": {"choir.agent": "alice"},
		"TaskTemplate": {
			"ContainerSpec": {
				"Image": "127.0.0.1:5000/choir/alice@sha256:abc",
				"Command": ["/usr/local/bin/choir-agent"],
				"Args": ["--serve"],
				"Env": ["CHOIR_AGENT=alice"],
				"User": "1000:1000",
				"ReadOnly": true,
				"StopGracePeriod": 5000000000,
				"CapabilityDrop": ["ALL"],
				"Mounts": [{"Type": "tmpfs", "Target": "/tmp", "TmpfsOptions": {"SizeBytes": 67108864}}],
				"Secrets": [{"File": {"Name": "choir-boot", "UID": "1000", "GID": "1000", "Mode": 256}, "SecretID": "sec1", "SecretName": "choir-alice-boot"}]
			},
			"Resources": {"Limits": {"MemoryBytes": 536870912, "Pids": 256}},
			"RestartPolicy": {"Condition": "none"},
			"Placement": {"Constraints": ["node.labels.choir.node==worker"]},
			"Networks": [{"Target": "host"}]
		},
		"Mode": {"Replicated": {"Replicas": 1}}
	}`
	if !sameJSON(t, body, want) {
		t.Errorf("body = %s\nwant %s", body, want)
	}
	dec, err := base64.URLEncoding.DecodeString(auth)
	if err != nil || !sameJSON(t, dec, `{"username":"choir","password":"pw","serveraddress":"127.0.0.1:5000"}`) {
		t.Errorf("X-Registry-Auth = %q (%s, %v); want base64url of the credentials", auth, dec, err)
	}
}

func TestServiceCreateConflict(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("X-Registry-Auth"); h != "" {
			t.Errorf("X-Registry-Auth = %q without credentials; want none", h)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"message":"rpc error: code = AlreadyExists desc = name conflicts with an existing object: service tsvc already exists"}`)
	})
	_, err := c.ServiceCreate(context.Background(), ServiceSpec{Name: "tsvc"}, nil)
	if !IsConflict(err) {
		t.Errorf("ServiceCreate = %v; want a conflict", err)
	}
}

// TestServiceInspectDecodes reads a real 20.10 answer.
func TestServiceInspectDecodes(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.Path != "/v1.41/services/tsvc" {
			t.Errorf("%s %s; want GET /v1.41/services/tsvc", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ID":"z4z9","Version":{"Index":38},"CreatedAt":"2026-11-29T04:25:48.7Z","UpdatedAt":"2026-11-29T04:25:48.7Z",
			"Spec":{"Name":"tsvc","Labels":{},"TaskTemplate":{"ContainerSpec":{"Image":"b@sha256:1","Args":["sleep","30"],"Init":false,"ReadOnly":true,
			"Secrets":[{"File":{"Name":"tsec","UID":"0","GID":"0","Mode":292},"SecretID":"3bu4","SecretName":"tsec"}],"CapabilityDrop":["ALL"],"Isolation":"default"},
			"Resources":{"Limits":{"MemoryBytes":67108864,"Pids":64},"Reservations":{}},"RestartPolicy":{"Condition":"none","Delay":5000000000,"MaxAttempts":0},
			"Placement":{"Constraints":["node.labels.choir.node==worker"]},"Networks":[{"Target":"kuz9"}],"ForceUpdate":0,"Runtime":"container"},
			"Mode":{"Replicated":{"Replicas":1}},"EndpointSpec":{"Mode":"vip"}},"Endpoint":{"Spec":{}}}`)
	})
	s, err := c.ServiceInspect(context.Background(), "tsvc")
	if err != nil {
		t.Fatalf("ServiceInspect = %v", err)
	}
	cs := s.Spec.TaskTemplate.ContainerSpec
	tt := s.Spec.TaskTemplate
	if s.ID != "z4z9" || s.Version.Index != 38 || cs == nil || !cs.ReadOnly || cs.CapabilityDrop[0] != "ALL" ||
		cs.Secrets[0].File.Mode != 0o444 || tt.Resources.Limits.Pids != 64 || tt.RestartPolicy.Condition != RestartNone ||
		*tt.RestartPolicy.Delay != 5*time.Second || tt.Placement.Constraints[0] != "node.labels.choir.node==worker" ||
		*s.Spec.Mode.Replicated.Replicas != 1 {
		t.Errorf("ServiceInspect = %+v (container %+v); want every field of the answer", s, cs)
	}
}

func TestServiceRemove(t *testing.T) {
	var method, path string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		method, path = r.Method, r.URL.Path
		if path == "/v1.41/services/gone" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"service gone not found"}`)
		}
	})
	if err := c.ServiceRemove(context.Background(), "svc1"); err != nil || method != "DELETE" || path != "/v1.41/services/svc1" {
		t.Errorf("ServiceRemove = %v as %s %s; want DELETE /v1.41/services/svc1", err, method, path)
	}
	if err := c.ServiceRemove(context.Background(), "gone"); !IsNotFound(err) {
		t.Errorf("ServiceRemove(gone) = %v; want not found", err)
	}
	if err := c.ServiceRemove(context.Background(), "a/../../containers/x"); err == nil {
		t.Errorf("ServiceRemove of a path = nil; want a refusal")
	}
}
