// Package notion is a read-only client of the Notion API, standard library
// only: search, a page as readable text, and database rows.
//
// The endpoints choir uses, each under {endpoint} (https://api.notion.com/v1
// by default), with "Authorization: Bearer <integration token>" and
// "Notion-Version: 2022-06-28" on every request:
//
//	POST /search                    {"query","filter":{"property":"object","value":"page"|"database"},"page_size","start_cursor"}
//	GET  /pages/{id}                a page and its properties
//	GET  /blocks/{id}/children      ?page_size=100&start_cursor=...  the blocks of a page or block
//	POST /databases/{id}/query      {"filter","sorts","page_size","start_cursor"}  the database's pages (rows)
//
// Lists answer {"object":"list","results":[...],"next_cursor":..,
// "has_more":..}; page_size is at most 100. A failure answers the error
// object {"object":"error","status":N,"code":"object_not_found"|
// "unauthorized"|"restricted_resource"|"rate_limited"|"validation_error"|
// ...,"message":"..."}; a 429 carries Retry-After in seconds.
//
// An id may be given dashed, undashed, or as a notion.so URL (ParseID).
// Every failure is an *APIError (status, code, message, retry-after); the
// token never appears in one.
package notion
