module choir

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/pgvector/pgvector-go v0.3.0
	github.com/playwright-community/playwright-go v0.5200.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/deckarep/golang-set/v2 v2.7.0 // indirect
	github.com/go-jose/go-jose/v3 v3.0.4 // indirect
	github.com/go-stack/stack v1.8.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
