package doctor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"choir/internal/config"
)

// checkMetrics says whether /metrics is on and, when choird runs, whether
// it answers there in the Prometheus text format.
func (d *Doctor) checkMetrics(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("the configuration did not load")
	}
	addr, on, remote, err := config.MetricsAddress(l.Config.Metrics)
	switch {
	case err != nil:
		return bad(Fail, "fix config.json metrics.listen", "metrics.listen: %v", err)
	case !on:
		return skip("off (no metrics block in config.json)")
	}
	detail := "on at " + addr
	if d.getStatus() == nil {
		return ok("%s (choird not running: not scraped)", detail)
	}
	ctx, cancel := context.WithTimeout(ctx, d.inner())
	defer cancel()
	families, err := scrapeFamilies(ctx, d.HTTP, "http://"+addr+"/metrics")
	if err != nil {
		return bad(Fail, "choird reads the metrics block at start: restart it after adding it, and look for 'serving /metrics' in its log",
			"%s, but choird does not serve it: %v", detail, err)
	}
	detail = fmt.Sprintf("%s, serving %d metric families", detail, families)
	if remote {
		return bad(Warn, "/metrics has no authentication: prefer a loopback address (127.0.0.1:PORT) unless a firewall protects this one",
			"%s to the network (metrics.allow_remote)", detail)
	}
	return ok("%s", detail)
}

// scrapeFamilies GETs url and counts the TYPE lines of its answer.
func scrapeFamilies(ctx context.Context, hc *http.Client, url string) (int, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		return 0, fmt.Errorf("GET %s answered %s (%s), not the Prometheus text format", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	return strings.Count("\n"+string(body), "\n# TYPE "), nil
}
