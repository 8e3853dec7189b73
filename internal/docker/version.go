package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// API versions this client speaks. It was written against the Engine API
// v1.41 reference (Docker 20.10); an engine older than MinAPIVersion is
// refused, a newer one is spoken to at MaxAPIVersion.
const (
	MinAPIVersion = "1.41"
	MaxAPIVersion = "1.41"
)

// Version is the engine's answer to GET /version.
type Version struct {
	Version       string // Docker release, e.g. "20.10.24+dfsg1"
	APIVersion    string `json:"ApiVersion"`
	MinAPIVersion string // oldest API version the engine still serves
	Os            string
	Arch          string
	KernelVersion string
	GoVersion     string
}

// ServerVersion asks the engine for its version (GET /version, without a
// version prefix so that it works before negotiation).
func (c *Client) ServerVersion(ctx context.Context) (Version, error) {
	var v Version
	err := c.do(ctx, request{method: "GET", path: "/version", unversioned: true}, &v)
	return v, err
}

// negotiate picks the API version to speak: the lower of the engine's and
// MaxAPIVersion. It refuses an engine older than MinAPIVersion and one whose
// own minimum is above what this client speaks.
func negotiate(engineAPI, engineMin string) (string, error) {
	ev, err := parseAPIVersion(engineAPI)
	if err != nil {
		return "", fmt.Errorf("engine API version: %w", err)
	}
	lo, _ := parseAPIVersion(MinAPIVersion)
	hi, _ := parseAPIVersion(MaxAPIVersion)
	if ev.less(lo) {
		return "", fmt.Errorf("engine speaks API %s, choir needs API %s or newer (Docker 20.10 or later): upgrade the engine", engineAPI, MinAPIVersion)
	}
	use := ev
	if hi.less(ev) {
		use = hi
	}
	if engineMin != "" {
		mv, err := parseAPIVersion(engineMin)
		if err != nil {
			return "", fmt.Errorf("engine minimum API version: %w", err)
		}
		if use.less(mv) {
			return "", fmt.Errorf("engine serves API %s to %s only, choir speaks API %s to %s: this engine is too new for this client", engineMin, engineAPI, MinAPIVersion, MaxAPIVersion)
		}
	}
	return use.String(), nil
}

type apiVersion struct{ major, minor int }

func parseAPIVersion(s string) (apiVersion, error) {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || a < 0 || b < 0 {
		return apiVersion{}, fmt.Errorf("%q is not an API version like 1.41", s)
	}
	return apiVersion{a, b}, nil
}

func (v apiVersion) less(w apiVersion) bool {
	return v.major < w.major || v.major == w.major && v.minor < w.minor
}

func (v apiVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }
