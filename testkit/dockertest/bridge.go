package dockertest

import (
	"fmt"
	"net"
	"testing"

	"choir/testkit"
)

// BridgeAddr is the IPv4 address of the engine's default bridge (docker0)
// on the host: containers reach a server bound there, and nothing outside
// the host does. Fakes that containers call bind on it, never on 0.0.0.0.
func BridgeAddr() (string, error) {
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		return "", fmt.Errorf("no docker0 bridge: is the Docker engine running with its default bridge? (%w)", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("docker0 has no IPv4 address")
}

// BridgeIP is BridgeAddr for tests: without a bridge the test is
// unavailable.
func BridgeIP(t testing.TB) string {
	t.Helper()
	ip, err := BridgeAddr()
	if err != nil {
		testkit.Unavailable(t, "%v", err)
	}
	return ip
}
