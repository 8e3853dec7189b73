// Package brave is a client of the Brave Search API's web search, standard
// library only.
//
// The one endpoint choir uses:
//
//	GET {endpoint}/web/search?q=...&count=N&offset=K[&country=..&search_lang=..&safesearch=..&freshness=..]
//	X-Subscription-Token: <token>
//	Accept: application/json
//
// where endpoint defaults to https://api.search.brave.com/res/v1. A success
// is {"type":"search","query":{"original":..,"more_results_available":..},
// "web":{"results":[{"title","url","description","age","page_age",
// "extra_snippets"}]}}; "web" is absent when nothing matched. A failure is
// {"type":"ErrorResponse","error":{"id","status","code","detail","meta"}}
// (an invalid token is a 422 SUBSCRIPTION_TOKEN_INVALID, a rate limit a 429
// RATE_LIMITED). Every answer carries the plan's X-RateLimit-Limit,
// -Policy, -Remaining and -Reset headers, comma-separated per window
// ("1, 15000": per second and per month); a 429's wait is its Retry-After
// when present, else the reset of the window whose quota is spent.
//
// Every failure is an *APIError (status, Brave's code, its message, the
// wait); the token never appears in one.
package brave
