// Package web holds the agent's tools for the web (design §8.7, §18):
//
//   - choir.web.search asks a search API (Brave Search) from inside the
//     container with the agent's own search key, and returns structured
//     results.
//   - choir.web.browse is a host tool: choird's browser worker
//     (choird/browser) runs it over EXECUTE_HOST_TOOL in the agent's own
//     browser context, so no browser ships in the agent's image.
//
// One tool per file.
package web
