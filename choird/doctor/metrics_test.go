package doctor

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
)

func TestMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write([]byte("# HELP a_total a\n# TYPE a_total counter\na_total 1\n# HELP b b\n# TYPE b gauge\nb 2\n"))
	}))
	defer srv.Close()
	serving := srv.Listener.Addr().String()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	silent := closed.Addr().String()
	closed.Close()
	notText := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer notText.Close()

	for _, tc := range []struct {
		name    string
		metrics *config.Metrics
		running bool
		status  Status
		want    []string
	}{
		{"off", nil, true, Skip, []string{"off (no metrics block"}},
		{"on, choird stopped", &config.Metrics{Listen: silent}, false, OK, []string{"on at " + silent, "not scraped"}},
		{"on and serving", &config.Metrics{Listen: serving}, true, OK, []string{"on at " + serving, "serving 2 metric families"}},
		{"on but not served", &config.Metrics{Listen: silent}, true, Fail, []string{"does not serve it", "restart it"}},
		{"something else answers", &config.Metrics{Listen: notText.Listener.Addr().String()}, true, Fail, []string{"not the Prometheus text format"}},
		{"loopback with allow_remote", &config.Metrics{Listen: serving, AllowRemote: true}, true, OK, []string{"serving 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Doctor{Home: newHome(t, nil)}
			d.loaded = &config.Loaded{Config: &config.Config{Metrics: tc.metrics}}
			if tc.running {
				d.status = &ctl.Status{Healthy: true}
			}
			rep := RunChecks(context.Background(), []Check{{"metrics", d.checkMetrics}}, 20*time.Second)
			expect(t, rep, "metrics", tc.status, tc.want...)
		})
	}
}
