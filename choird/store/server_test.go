package store

import "testing"

// TestServerInfo: the doctor learns the server's version and that pgvector
// is there; after Bootstrap the extension is installed in the database.
func TestServerInfo(t *testing.T) {
	s := newStore(t, Config{}, "a1")
	si, err := s.ServerInfo(ctxT(t))
	if err != nil {
		t.Fatalf("ServerInfo = %v", err)
	}
	if si.Version == "" || si.VectorAvailable == "" || si.VectorInstalled == "" {
		t.Errorf("ServerInfo = %+v; want a version and pgvector available and installed", si)
	}
}
