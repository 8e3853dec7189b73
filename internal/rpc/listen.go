package rpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path).
const maxSocketPath = 107

// ListenUnix listens on a Unix socket with mode 0600. Its directory is made
// 0700 first so the socket is never reachable by others, even before chmod.
// A stale socket from a dead process is replaced; a live one is refused.
func ListenUnix(path string) (net.Listener, error) {
	l, err := listenUnix(path, 0o700, 0o600)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// listenUnix listens on a Unix socket at path: its directory gets dirMode
// (any missing directory above it 0700), the socket sockMode.
func listenUnix(path string, dirMode, sockMode os.FileMode) (*net.UnixListener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes; Unix sockets allow %d: use a shorter home directory", path, len(path), maxSocketPath)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return nil, fmt.Errorf("set the mode of socket directory %s: %w", dir, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use: is another choird running with this home?", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
	}
	if err := os.Chmod(path, sockMode); err != nil {
		l.Close()
		return nil, fmt.Errorf("set the mode of socket %s: %w", path, err)
	}
	return l, nil
}

// ListenTCP listens for the HTTP transport. With a certificate and key it
// serves TLS; without, it refuses any address that is not loopback, since
// lease tokens must not cross a network in the clear. With clientCAs (TLS
// only) it is mutual: a connection whose client certificate none of them
// signed, or that has none, ends in the handshake (certs.go).
func ListenTCP(addr, certFile, keyFile string, clientCAs *x509.CertPool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", addr, err)
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if certFile == "" && clientCAs != nil {
		return nil, errors.New("client certificates need TLS: give --tls-cert and --tls-key")
	}
	if certFile == "" && !isLoopback(host) {
		return nil, fmt.Errorf("--listen %s without --tls-cert/--tls-key is refused: plaintext is allowed only on a loopback address (127.0.0.1:port)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if certFile == "" {
		return l, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	return tls.NewListener(l, conf), nil
}
