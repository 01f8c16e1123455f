package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
)

// fakeEngine speaks the few Docker Engine API calls testcontainers-go and
// the reaper make: ping, version, info, image inspect, container create,
// start, inspect, logs, stop, remove and list.
type fakeEngine struct {
	srv *httptest.Server

	mu         sync.Mutex
	containers map[string]*fakeContainer
	order      []string
	requests   []string
	unknown    []string
	next       int
	// hostPort is what inspect reports for every published port.
	hostPort string
	// exitAtOnce makes started containers stop with exit code 3.
	exitAtOnce bool
}

type fakeContainer struct {
	ID      string
	Image   string
	Labels  map[string]string
	Create  map[string]any // the create request body
	Running bool
	Exit    int
	Removed bool
}

var apiPath = regexp.MustCompile(`^(?:/v[0-9.]+)?(/.*)$`)

func newFakeEngine() *fakeEngine {
	e := &fakeEngine{containers: map[string]*fakeContainer{}}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

func (e *fakeEngine) addr() string { return strings.TrimPrefix(e.srv.URL, "http://") }
func (e *fakeEngine) close()       { e.srv.Close() }

func (e *fakeEngine) reset(hostPort string, exitAtOnce bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.containers = map[string]*fakeContainer{}
	e.order, e.requests, e.unknown = nil, nil, nil
	e.hostPort, e.exitAtOnce = hostPort, exitAtOnce
}

// add puts a container into the engine directly (for reaper tests).
func (e *fakeEngine) add(labels map[string]string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.next++
	id := fmt.Sprintf("c%063d", e.next)
	e.containers[id] = &fakeContainer{ID: id, Image: "x", Labels: labels, Running: true}
	e.order = append(e.order, id)
	return id
}

func (e *fakeEngine) live() []*fakeContainer {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*fakeContainer
	for _, id := range e.order {
		if c := e.containers[id]; !c.Removed {
			out = append(out, c)
		}
	}
	return out
}

func (e *fakeEngine) log() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (e *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	m := apiPath.FindStringSubmatch(r.URL.Path)
	path := m[1]
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+path)
	e.mu.Unlock()
	w.Header().Set("Api-Version", "1.44")
	w.Header().Set("Ostype", "linux")
	seg := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/_ping":
		io.WriteString(w, "OK")
	case path == "/version":
		writeJSON(w, 200, map[string]any{"ApiVersion": "1.44", "MinAPIVersion": "1.24", "Version": "27.0.0", "Os": "linux", "Arch": "amd64"})
	case path == "/info":
		writeJSON(w, 200, map[string]any{"ID": "fake", "Name": "fake-engine", "OperatingSystem": "Fake Engine", "OSType": "linux",
			"ServerVersion": "27.0.0", "NCPU": 2, "MemTotal": 1 << 34, "Labels": []string{}})
	case len(seg) == 3 && seg[0] == "images" && seg[2] == "json":
		writeJSON(w, 200, map[string]any{"Id": "sha256:" + strings.Repeat("a", 64), "RepoTags": []string{seg[1]}, "Os": "linux", "Architecture": "amd64", "Config": map[string]any{"ExposedPorts": map[string]any{}}})
	case path == "/images/create":
		writeJSON(w, 200, map[string]any{"status": "pulled"})
	case path == "/containers/create" && r.Method == "POST":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		e.mu.Lock()
		e.next++
		id := fmt.Sprintf("c%063d", e.next)
		labels := map[string]string{}
		if l, ok := body["Labels"].(map[string]any); ok {
			for k, v := range l {
				labels[k], _ = v.(string)
			}
		}
		img, _ := body["Image"].(string)
		e.containers[id] = &fakeContainer{ID: id, Image: img, Labels: labels, Create: body}
		e.order = append(e.order, id)
		e.mu.Unlock()
		writeJSON(w, 201, map[string]any{"Id": id, "Warnings": []string{}})
	case path == "/networks" && r.Method == "GET":
		writeJSON(w, 200, []map[string]any{{"Name": "bridge", "Id": strings.Repeat("b", 64), "Driver": "bridge", "Scope": "local"}})
	case path == "/networks/create":
		writeJSON(w, 201, map[string]any{"Id": strings.Repeat("n", 64)})
	case path == "/containers/json":
		e.list(w, r)
	case len(seg) >= 2 && seg[0] == "containers":
		e.container(w, r, seg[1], strings.Join(seg[2:], "/"))
	default:
		e.mu.Lock()
		e.unknown = append(e.unknown, r.Method+" "+path)
		e.mu.Unlock()
		writeJSON(w, 404, map[string]any{"message": "fake engine: no route for " + r.Method + " " + path})
	}
}

func (e *fakeEngine) list(w http.ResponseWriter, r *http.Request) {
	var filters map[string]map[string]bool
	json.Unmarshal([]byte(r.URL.Query().Get("filters")), &filters)
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	for _, id := range e.order {
		c := e.containers[id]
		if c.Removed {
			continue
		}
		ok := true
		for f := range filters["label"] {
			k, v, hasV := strings.Cut(f, "=")
			got, present := c.Labels[k]
			if !present || (hasV && got != v) {
				ok = false
			}
		}
		if ok {
			out = append(out, map[string]any{"Id": c.ID, "Names": []string{"/" + c.ID[:12]}, "Image": c.Image, "Labels": c.Labels, "State": "running"})
		}
	}
	writeJSON(w, 200, out)
}

func (e *fakeEngine) container(w http.ResponseWriter, r *http.Request, id, op string) {
	e.mu.Lock()
	c := e.containers[id]
	e.mu.Unlock()
	if c == nil || c.Removed {
		writeJSON(w, 404, map[string]any{"message": "No such container: " + id})
		return
	}
	switch {
	case op == "start":
		e.mu.Lock()
		c.Running = !e.exitAtOnce
		if e.exitAtOnce {
			c.Exit = 3
		}
		e.mu.Unlock()
		w.WriteHeader(204)
	case op == "stop" || op == "kill":
		e.mu.Lock()
		c.Running = false
		e.mu.Unlock()
		w.WriteHeader(204)
	case op == "" && r.Method == "DELETE":
		e.mu.Lock()
		c.Removed, c.Running = true, false
		e.mu.Unlock()
		w.WriteHeader(204)
	case op == "logs":
		// Multiplexed stream: header (stream 1, length) + payload.
		msg := "vdevice: boot failed: no CAP_SYS_ADMIN\n"
		hdr := []byte{1, 0, 0, 0, 0, 0, 0, byte(len(msg))}
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
		w.Write(append(hdr, msg...))
	case op == "json":
		e.mu.Lock()
		status := "running"
		if !c.Running {
			status = "exited"
		}
		ports := map[string]any{}
		if cfg, ok := c.Create["ExposedPorts"].(map[string]any); ok {
			for p := range cfg {
				ports[p] = []map[string]string{{"HostIp": "127.0.0.1", "HostPort": e.hostPort}}
			}
		}
		body := map[string]any{
			"Id": c.ID, "Name": "/" + c.ID[:12], "Image": "sha256:x", "Created": "2026-01-01T00:00:00Z",
			"State":           map[string]any{"Status": status, "Running": c.Running, "ExitCode": c.Exit, "StartedAt": "2026-01-01T00:00:00Z"},
			"Config":          map[string]any{"Image": c.Image, "Labels": c.Labels},
			"HostConfig":      c.Create["HostConfig"],
			"NetworkSettings": map[string]any{"Ports": ports, "Networks": map[string]any{}},
		}
		e.mu.Unlock()
		writeJSON(w, 200, body)
	default:
		e.mu.Lock()
		e.unknown = append(e.unknown, r.Method+" /containers/ID/"+op)
		e.mu.Unlock()
		writeJSON(w, 404, map[string]any{"message": "fake engine: no route"})
	}
}
