package rpc

// HostToolWebBrowse is the browser host tool (design §18.2): the agent's
// choir.web.browse is run by choird's browser worker (choird/browser), in
// the calling agent's own browser context.
const HostToolWebBrowse = "choir.web.browse"
