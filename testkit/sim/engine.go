package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// engine is the least of the Docker Engine API (1.41) that choird's
// agent lifecycle calls, served on a unix socket: no process runs; a
// container's start starts a simulated agent (agent.go) that speaks the
// real agent RPC to choird over HTTPS, and its exit is the container's.
// It decodes the raw JSON choird sends (never internal/docker's structs),
// answers only what the lifecycle needs, and counts any other call so the
// table can say what the fake did not serve.
type engine struct {
	gateway  string             // the bridge network's gateway: where choird listens for agents
	version  string             // the fake agent image's choir.image_version
	newAgent func(c *container) // starts the simulated agent of a started container

	mu         sync.Mutex
	containers map[string]*container // by id
	unknown    map[string]int        // "METHOD /path" not served → count

	creates, stops, kills, removes atomic.Int64
}

// container is one fake container.
type container struct {
	id, name string
	labels   map[string]string
	image    string
	spec     agentSpec
	created  time.Time

	mu                 sync.Mutex
	state              string // created, running, exited
	exitCode           int
	exited             chan struct{} // closed when the agent has ended
	stop               chan struct{} // closed to ask the agent to stop gracefully (SIGTERM)
	kill               chan struct{} // closed to end it at once (SIGKILL)
	stopOnce, killOnce sync.Once
}

// agentSpec is what choir-agent would find in its container: the
// environment and command line choird gave it, and the CA in its socket
// directory (read on the host, where the bind mount's source is).
type agentSpec struct {
	AgentID, SessionID, LeaseToken string
	HeartbeatMS                    int
	Endpoint                       string // --endpoint
	CAFile                         string // the host path of --tls-ca
}

func newEngine(gateway, version string) *engine {
	return &engine{gateway: gateway, version: version, containers: map[string]*container{}, unknown: map[string]int{}}
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	// Versioned paths: /v1.41/containers/...; /_ping and /version are
	// also served without the prefix.
	if rest, ok := strings.CutPrefix(p, "/v"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			if _, err := strconv.ParseFloat(rest[:i], 64); err == nil {
				p = rest[i:]
			}
		}
	}
	switch {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Ostype", "linux")
		io.WriteString(w, "OK")
	case p == "/version":
		writeJSON(w, http.StatusOK, map[string]any{"Version": "20.10.24+sim", "ApiVersion": "1.41", "MinAPIVersion": "1.12",
			"Os": "linux", "Arch": "amd64", "KernelVersion": "sim", "GoVersion": "sim"})
	case p == "/info":
		e.mu.Lock()
		n := len(e.containers)
		e.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"ID": "sim", "Containers": n, "ServerVersion": "20.10.24+sim", "OperatingSystem": "choir testkit/sim",
			"NCPU": 2, "MemTotal": 0, "Driver": "sim", "CgroupVersion": "1"})
	case p == "/networks/bridge" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"Name": "bridge", "Id": "sim-bridge", "Driver": "bridge",
			"IPAM":    map[string]any{"Config": []any{map[string]any{"Subnet": e.gateway + "/32", "Gateway": e.gateway}}},
			"Options": map[string]string{}})
	case strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json") && r.Method == http.MethodGet:
		e.imageInspect(w, strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json"))
	case p == "/containers/create" && r.Method == http.MethodPost:
		e.create(w, r)
	case p == "/containers/json" && r.Method == http.MethodGet:
		e.list(w, r)
	case strings.HasPrefix(p, "/containers/"):
		e.containerCall(w, r, strings.TrimPrefix(p, "/containers/"))
	default:
		e.notServed(w, r, p)
	}
}

func (e *engine) notServed(w http.ResponseWriter, r *http.Request, p string) {
	e.mu.Lock()
	e.unknown[r.Method+" "+p]++
	e.mu.Unlock()
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "testkit/sim's engine does not serve " + r.Method + " " + p})
}

// notServedCalls lists the calls the fake answered 404 because it does
// not know them, with counts, sorted.
func (e *engine) notServedCalls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for k, n := range e.unknown {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(out)
	return out
}

// imageInspect answers for choir-agent-<id>:latest (and the version tag)
// with the labels the lifecycle's latestImage checks.
func (e *engine) imageInspect(w http.ResponseWriter, name string) {
	name, _ = url.PathUnescape(name)
	repo, tag, _ := strings.Cut(name, ":")
	agent, ok := strings.CutPrefix(repo, "choir-agent-")
	if !ok || agent == "" || (tag != "latest" && tag != e.version) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No such image: " + name})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"Id":       imageID(repo),
		"RepoTags": []string{repo + ":latest", repo + ":" + e.version},
		"Config": map[string]any{"Labels": map[string]string{
			"choir.managed": "true", "choir.agent": agent, "choir.image_version": e.version}},
	})
}

func imageID(repo string) string {
	var b [32]byte
	copy(b[:], repo)
	return "sha256:" + hex.EncodeToString(b[:])
}

// createBody is the part of POST /containers/create the fake reads.
type createBody struct {
	Image      string
	Cmd        []string
	Env        []string
	Labels     map[string]string
	HostConfig struct {
		Mounts []struct {
			Type, Source, Target string
			ReadOnly             bool
		}
	}
}

// parseCreate reads what choir-agent would see in its container from a
// create request's body: the identity in the environment, the endpoint
// and CA on the command line (--control-plane=http), the CA's host path
// through the mount of its directory.
func parseCreate(data []byte) (agentSpec, createBody, error) {
	var b createBody
	if err := json.Unmarshal(data, &b); err != nil {
		return agentSpec{}, b, fmt.Errorf("create body: %w", err)
	}
	var s agentSpec
	for _, kv := range b.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CHOIR_AGENT_ID":
			s.AgentID = v
		case "CHOIR_SESSION_ID":
			s.SessionID = v
		case "CHOIR_LEASE_TOKEN":
			s.LeaseToken = v
		case "CHOIR_HEARTBEAT_MS":
			s.HeartbeatMS, _ = strconv.Atoi(v)
		}
	}
	caInside := ""
	transport := ""
	for _, a := range b.Cmd {
		switch {
		case strings.HasPrefix(a, "--control-plane="):
			transport = strings.TrimPrefix(a, "--control-plane=")
		case strings.HasPrefix(a, "--endpoint="):
			s.Endpoint = strings.TrimPrefix(a, "--endpoint=")
		case strings.HasPrefix(a, "--tls-ca="):
			caInside = strings.TrimPrefix(a, "--tls-ca=")
		}
	}
	if transport != "http" || s.Endpoint == "" || caInside == "" {
		return s, b, fmt.Errorf("command %q: the simulator plays agents over HTTPS only (--control-plane=http with --endpoint and --tls-ca): run choird with --transport=http", b.Cmd)
	}
	if s.AgentID == "" || s.SessionID == "" || s.LeaseToken == "" || s.HeartbeatMS <= 0 {
		return s, b, fmt.Errorf("environment lacks CHOIR_AGENT_ID, CHOIR_SESSION_ID, CHOIR_LEASE_TOKEN or CHOIR_HEARTBEAT_MS")
	}
	for _, m := range b.HostConfig.Mounts {
		if rel, ok := strings.CutPrefix(caInside, strings.TrimSuffix(m.Target, "/")+"/"); ok {
			s.CAFile = path.Join(m.Source, rel)
		}
	}
	if s.CAFile == "" {
		return s, b, fmt.Errorf("--tls-ca=%s is under no mount", caInside)
	}
	return s, b, nil
}

func (e *engine) create(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	spec, body, err := parseCreate(data)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	var id [32]byte
	rand.Read(id[:])
	c := &container{id: hex.EncodeToString(id[:]), name: r.URL.Query().Get("name"), labels: body.Labels, image: body.Image,
		spec: spec, created: time.Now(), state: "created",
		exited: make(chan struct{}), stop: make(chan struct{}), kill: make(chan struct{})}
	e.mu.Lock()
	e.containers[c.id] = c
	e.mu.Unlock()
	e.creates.Add(1)
	writeJSON(w, http.StatusCreated, map[string]any{"Id": c.id, "Warnings": []string{}})
}

// find resolves a container by id, id prefix or name.
func (e *engine) find(ref string) *container {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.containers[ref]; c != nil {
		return c
	}
	for _, c := range e.containers {
		if c.name == ref || strings.TrimPrefix(ref, "/") == c.name || (len(ref) >= 12 && strings.HasPrefix(c.id, ref)) {
			return c
		}
	}
	return nil
}

func (e *engine) containerCall(w http.ResponseWriter, r *http.Request, rest string) {
	ref, op, _ := strings.Cut(rest, "/")
	c := e.find(ref)
	if c == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No such container: " + ref})
		return
	}
	switch {
	case op == "start" && r.Method == http.MethodPost:
		c.mu.Lock()
		if c.state != "created" {
			c.mu.Unlock()
			w.WriteHeader(http.StatusNotModified)
			return
		}
		c.state = "running"
		c.mu.Unlock()
		e.newAgent(c)
		w.WriteHeader(http.StatusNoContent)
	case op == "wait" && r.Method == http.MethodPost:
		// not-running (the lifecycle's condition): at once when it is not
		// running, else when the agent ends.
		select {
		case <-c.exited:
		case <-r.Context().Done():
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"StatusCode": c.code()})
	case op == "json" && r.Method == http.MethodGet:
		e.inspect(w, c)
	case op == "logs" && r.Method == http.MethodGet:
		// The simulated agent writes no log: an empty multiplexed stream,
		// held open while it runs when followed.
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if q := r.URL.Query().Get("follow"); q == "1" || q == "true" {
			select {
			case <-c.exited:
			case <-r.Context().Done():
			}
		}
	case op == "stop" && r.Method == http.MethodPost:
		e.stops.Add(1)
		if !c.running() {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		t := 10 * time.Second
		if s, err := strconv.Atoi(r.URL.Query().Get("t")); err == nil && s >= 0 {
			t = time.Duration(s) * time.Second
		}
		c.askStop()
		select {
		case <-c.exited:
		case <-time.After(t):
			c.askKill()
			<-c.exited
		}
		w.WriteHeader(http.StatusNoContent)
	case op == "kill" && r.Method == http.MethodPost:
		e.kills.Add(1)
		if !c.running() {
			writeJSON(w, http.StatusConflict, map[string]string{"message": "Container " + c.id + " is not running"})
			return
		}
		c.askKill()
		w.WriteHeader(http.StatusNoContent)
	case op == "" && r.Method == http.MethodDelete:
		e.removes.Add(1)
		force := r.URL.Query().Get("force")
		if c.running() && force != "1" && force != "true" {
			writeJSON(w, http.StatusConflict, map[string]string{"message": "You cannot remove a running container " + c.id})
			return
		}
		if c.running() {
			c.askKill()
			<-c.exited
		}
		e.mu.Lock()
		delete(e.containers, c.id)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		e.notServed(w, r, "/containers/{id}/"+op)
	}
}

func (e *engine) inspect(w http.ResponseWriter, c *container) {
	c.mu.Lock()
	st := map[string]any{"Status": c.state, "Running": c.state == "running", "ExitCode": c.exitCode}
	if c.state == "running" {
		st["Pid"] = 1
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"Id": c.id, "Name": "/" + c.name, "Created": c.created, "Image": imageID(strings.Split(c.image, ":")[0]),
		"State": st, "Config": map[string]any{"Image": c.image, "Labels": c.labels}, "HostConfig": map[string]any{}})
}

// list answers GET /containers/json with the label filters applied.
func (e *engine) list(w http.ResponseWriter, r *http.Request) {
	want, err := labelFilters(r.URL.Query().Get("filters"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	all := r.URL.Query().Get("all")
	e.mu.Lock()
	cs := make([]*container, 0, len(e.containers))
	for _, c := range e.containers {
		cs = append(cs, c)
	}
	e.mu.Unlock()
	out := []map[string]any{}
	for _, c := range cs {
		if !matchLabels(c.labels, want) || (!c.running() && all != "1" && all != "true") {
			continue
		}
		c.mu.Lock()
		state := c.state
		c.mu.Unlock()
		out = append(out, map[string]any{"Id": c.id, "Names": []string{"/" + c.name}, "Image": c.image, "State": state,
			"Status": state, "Labels": c.labels, "Created": c.created.Unix()})
	}
	writeJSON(w, http.StatusOK, out)
}

// labelFilters reads the "label" entries of a filters query parameter
// (the engine accepts {"label":["k=v"]} and {"label":{"k=v":true}}).
func labelFilters(q string) ([]string, error) {
	if q == "" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(q), &raw); err != nil {
		return nil, fmt.Errorf("filters %q: %w", q, err)
	}
	l, ok := raw["label"]
	if !ok {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(l, &list); err == nil {
		return list, nil
	}
	var set map[string]bool
	if err := json.Unmarshal(l, &set); err != nil {
		return nil, fmt.Errorf("filters %q: label: want a list or a set of strings", q)
	}
	for k, v := range set {
		if v {
			list = append(list, k)
		}
	}
	sort.Strings(list)
	return list, nil
}

// matchLabels says whether labels has every "k" or "k=v" of want.
func matchLabels(labels map[string]string, want []string) bool {
	for _, f := range want {
		k, v, hasV := strings.Cut(f, "=")
		got, ok := labels[k]
		if !ok || (hasV && got != v) {
			return false
		}
	}
	return true
}

func (c *container) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == "running"
}

func (c *container) code() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCode
}

func (c *container) askStop() { c.stopOnce.Do(func() { close(c.stop) }) }
func (c *container) askKill() { c.killOnce.Do(func() { close(c.kill) }) }

// exit records the agent's end with its exit code.
func (c *container) exit(code int) {
	c.mu.Lock()
	c.state, c.exitCode = "exited", code
	c.mu.Unlock()
	close(c.exited)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
