package memory

import (
	"testing"

	"choir/testkit/pgtest"
)

// TestMain stops the PGlite server the Postgres-backed tests start.
func TestMain(m *testing.M) { pgtest.Main(m) }
