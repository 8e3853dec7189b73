package doctor

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"choir/internal/config"
)

// Clock skew thresholds: beyond clockWarn times in logs and events
// disagree with the world's; beyond clockFail TLS certificates, token
// expiries and schedules go wrong.
const (
	clockWarn = 10 * time.Second
	clockFail = 2 * time.Minute
)

// checkClock compares this host's clock with the Date header of the first
// configured model endpoint that answers. Offline (none answers) it is
// skipped: the clock cannot be judged, and nothing is wrong with that.
func (d *Doctor) checkClock(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("needs a valid config (see the config line)")
	}
	seen := map[string]bool{}
	var endpoints []string
	for _, name := range config.SortedNames(l.Config.Models) {
		ep := l.Config.Models[name].Endpoint
		if ep != "" && !seen[ep] {
			seen[ep] = true
			endpoints = append(endpoints, ep)
		}
	}
	if len(endpoints) == 0 {
		return skip("no model endpoint is configured to compare with")
	}
	hc := d.HTTP
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	// Offline, a connection may hang rather than fail: stop asking before
	// the check's deadline and skip, as for any other offline answer.
	ctx, cancel := context.WithTimeout(ctx, d.inner())
	defer cancel()
	var tried []string
	for _, ep := range endpoints {
		host := hostOf(ep)
		tried = append(tried, host)
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, ep, nil)
		if err != nil {
			continue
		}
		sent := d.now()
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		resp.Body.Close()
		received := d.now()
		date, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			continue
		}
		// The server read its clock between sending and receiving; the
		// header truncates it to the second, so its middle is the estimate.
		local := sent.Add(received.Sub(sent) / 2)
		skew := local.Sub(date.Add(time.Second / 2))
		detail := fmt.Sprintf("%s from %s's Date header", describeSkew(skew), host)
		fix := "synchronise the clock (timedatectl set-ntp true, or chrony/ntpd)"
		switch abs := max(skew, -skew); {
		case abs > clockFail:
			return bad(Fail, fix, "%s: TLS, token expiries and schedules will go wrong", detail)
		case abs > clockWarn:
			return bad(Warn, fix, "%s", detail)
		}
		return ok("%s", detail)
	}
	return skip("no model endpoint answered (%v): offline, so the clock was not compared", tried)
}

func describeSkew(skew time.Duration) string {
	s := skew.Round(time.Second)
	switch {
	case max(skew, -skew) < time.Second:
		return "this host's clock agrees within a second"
	case s > 0:
		return fmt.Sprintf("this host's clock is %s ahead", s)
	}
	return fmt.Sprintf("this host's clock is %s behind", -s)
}

// hostOf is an endpoint's host, never its path or credentials.
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "an endpoint"
	}
	return u.Host
}
