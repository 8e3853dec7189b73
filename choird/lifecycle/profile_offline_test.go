package lifecycle

import (
	"strings"
	"testing"
)

// Offline takes the container off every network, with IPv6 on its
// loopback (so IPv6 attempts are counted); Verify admits exactly those
// kernel parameters, and only without network.
func TestOfflineProfile(t *testing.T) {
	s := testSpec()
	cfg, hc := Profile(s)
	Offline(hc)
	if err := Verify(cfg, hc, s); err != nil {
		t.Fatalf("Verify(Offline(Profile)) = %v", err)
	}
	if hc.NetworkMode != "none" || len(hc.Sysctls) != 2 || hc.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "0" {
		t.Errorf("Offline: network %q, sysctls %v", hc.NetworkMode, hc.Sysctls)
	}
	for _, tc := range []struct {
		name       string
		network, k string
		v          string
	}{
		{"another parameter", "none", "net.ipv4.ip_forward", "1"},
		{"IPv6 disabled again", "none", "net.ipv6.conf.lo.disable_ipv6", "1"},
		{"ping for everyone", "none", "net.ipv4.ping_group_range", "0 2147483647"},
		{"on the bridge", "bridge", "net.ipv6.conf.lo.disable_ipv6", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hc := Profile(s)
			hc.NetworkMode = tc.network
			hc.Sysctls = map[string]string{tc.k: tc.v}
			if err := Verify(cfg, hc, s); err == nil || !strings.Contains(err.Error(), "kernel parameter "+tc.k) {
				t.Errorf("Verify(network %s, %s=%s) = %v; want refused naming it", tc.network, tc.k, tc.v, err)
			}
		})
	}
}
