package web

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"choir/agent/tool"
	"choir/internal/rpc"
)

// BrowseTool is choir.web.browse's name.
const BrowseTool = rpc.HostToolWebBrowse

// browseTimeout bounds a call on the agent's side: the longest timeout_ms
// the worker accepts (2 minutes) plus time to start the browser and answer.
const browseTimeout = 150 * time.Second

const browseDescription = "Open a web page (http or https) in your own browser and read it: its readable text " +
	"(mode text, the default), its links (mode links), or a PNG screenshot saved under .choirtmp/send/, which goes " +
	"to the user with your next reply (mode screenshot). Pages stay open in named tabs (tab, default \"main\"): leave out " +
	"url to read a tab as it is, or mode close to close it. Before reading, actions can click an element, fill a " +
	"field or wait for an element to appear (selectors are CSS, or Playwright's text=...). Cookies and storage " +
	"last for your session and are yours alone. Long pages are cut at max_chars; the result says when."

const browseParams = `{"type":"object","additionalProperties":false,"properties":{` +
	`"url":{"type":"string","minLength":1,"maxLength":4096,"description":"the page to open (http or https); leave out to read the tab's current page"},` +
	`"mode":{"type":"string","enum":["text","links","screenshot","close"],"description":"what to read; default text"},` +
	`"tab":{"type":"string","minLength":1,"maxLength":32,"description":"the tab's name: lowercase letters, digits, - and _; default main"},` +
	`"actions":{"type":"array","description":"at most 10 steps, run in order after the page loads, before it is read","items":{` +
	`"type":"object","additionalProperties":false,"required":["type","selector"],"properties":{` +
	`"type":{"type":"string","enum":["click","fill","wait"]},` +
	`"selector":{"type":"string","minLength":1,"maxLength":1024},` +
	`"value":{"type":"string","maxLength":4096,"description":"the text to type (fill only)"}}}},` +
	`"timeout_ms":{"type":"integer","minimum":1000,"maximum":120000,"description":"deadline for the whole call; default 30000"},` +
	`"max_chars":{"type":"integer","minimum":1,"maximum":262144,"description":"most characters of text returned; default 32768"},` +
	`"full_page":{"type":"boolean","description":"screenshot the whole page rather than the 1280x800 viewport"}}}`

// Browse returns choir.web.browse, which choird runs (host) in the calling
// agent's own browser context. It holds browser_tab X (the agent's
// context: one call at a time drives it) and choirtmp X (a screenshot is
// written into .choirtmp/send/).
func Browse(host tool.HostFunc) tool.Tool {
	if host == nil {
		host = func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("choir-agent has no connection to choird for host tools")
		}
	}
	t, _ := tool.NewHostTool(tool.HostDef{
		LLM: tool.LLMTool{Name: BrowseTool, Description: browseDescription, Parameters: json.RawMessage(browseParams)},
		Runtime: tool.Runtime{
			Timeout: browseTimeout, Network: true, SideEffect: tool.SideEffectExternal, Exposure: tool.ExposeBoth, Version: "1",
			Locks: []tool.LockReq{{Key: "browser_tab", Mode: tool.Exclusive}, {Key: "choirtmp", Mode: tool.Exclusive}},
		},
	}, host) // refuses only a nil host
	return t
}
