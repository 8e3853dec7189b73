package main

// choirctl agent init|build|start|stop|restart|status|list
//
// The agent group: each subcommand lives in its own file (agent_init.go,
// agent_build.go, agent_start.go, agent_status.go) with its help at the top.

// agentCommands are the subcommands of `choirctl agent`, each in its own file.
var agentCommands = []command{
	{name: "init", args: "<agent-id> [--repo DIR]", summary: "add a placeholder agent and scaffold its repo", run: agentInit},
	{name: "build", args: "<agent-id> [--json]", summary: "build the agent's image from its repos", run: agentBuild},
	{name: "update", args: "<agent-id> [--json]", summary: "build if needed, then restart a running agent on the new image", run: agentUpdate},
	{name: "update-all", args: "[--json]", summary: "update every agent, one after the other", run: agentUpdateAll},
	{name: "start", args: "<agent-id> --dm=<name>", summary: "start an agent (flags override its defaults)", run: agentStart},
	{name: "stop", args: "<agent-id>", summary: "stop an agent gracefully", run: agentStop},
	{name: "restart", args: "<agent-id>", summary: "stop an agent and start it again", run: agentRestart},
	{name: "status", args: "<agent-id> [--json]", summary: "state, session, bindings, lanes, heartbeat", run: agentStatus},
	{name: "list", args: "[--json]", summary: "every configured agent and its state", run: agentList},
}
