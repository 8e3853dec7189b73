package store

import (
	"context"
	"fmt"
)

// ServerInfo is what choir's doctor reports of the database server.
type ServerInfo struct {
	Version string // server_version, e.g. "17.5"
	// VectorAvailable is pgvector's default version among the server's
	// available extensions; "" when the server has no pgvector.
	VectorAvailable string
	// VectorInstalled is the version created in this database; "" before
	// choird's first start creates it.
	VectorInstalled string
}

// ServerInfo asks the server for its version and whether the vector
// extension is available. It only reads.
func (s *Store) ServerInfo(ctx context.Context) (ServerInfo, error) {
	var si ServerInfo
	err := s.pool.QueryRow(ctx, `
		SELECT current_setting('server_version'),
			coalesce((SELECT default_version FROM pg_available_extensions WHERE name = 'vector'), ''),
			coalesce((SELECT installed_version FROM pg_available_extensions WHERE name = 'vector'), '')`).
		Scan(&si.Version, &si.VectorAvailable, &si.VectorInstalled)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("ask postgres for its version and extensions: %w", err)
	}
	return si, nil
}
