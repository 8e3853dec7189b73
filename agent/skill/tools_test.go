package skill

import (
	"encoding/json"
	"testing"

	"choir/internal/jsonschema"
)

func TestTools(t *testing.T) {
	r := startBuildFeature(t)
	if _, err := r.Transition("complete"); err != nil {
		t.Fatal(err)
	}
	tools := r.Tools()
	if len(tools) != 1 || tools[0].Name != TransitionTool {
		t.Fatalf("Tools() in plan = %+v; want only %s", tools, TransitionTool)
	}
	wantParams := `{"additionalProperties":false,"properties":{"on":{"description":"The event that ends the current step.",` +
		`"enum":["complete","revise"],"type":"string"}},"required":["on"],"type":"object"}`
	if got := string(tools[0].Parameters); got != wantParams {
		t.Errorf("Tools() in plan parameters =\n%s\nwant\n%s", got, wantParams)
	}
	// The definition is the LLM view of §8.3 and a schema our validator takes.
	raw, _ := json.Marshal(tools[0])
	var view map[string]json.RawMessage
	if err := json.Unmarshal(raw, &view); err != nil || len(view) != 3 || view["name"] == nil || view["description"] == nil {
		t.Errorf("json.Marshal(ToolDef) = %s; want name, description, parameters", raw)
	}
	schema, err := jsonschema.Compile(tools[0].Parameters)
	if err != nil {
		t.Fatalf("Compile(transition parameters) = %v", err)
	}
	if err := schema.Validate(json.RawMessage(`{"on":"revise"}`)); err != nil {
		t.Errorf("transition parameters refuse {on: revise}: %v", err)
	}
	if err := schema.Validate(json.RawMessage(`{"on":"fail"}`)); err == nil {
		t.Errorf("transition parameters accept {on: fail}, an event of another state")
	}

	for _, on := range []string{"complete", "complete", "complete"} {
		if _, err := r.Transition(on); err != nil {
			t.Fatal(err)
		}
	}
	tools = r.Tools()
	if len(tools) != 1 || tools[0].Name != FinishTool {
		t.Fatalf("Tools() in done = %+v; want only %s", tools, FinishTool)
	}
	schema, err = jsonschema.Compile(tools[0].Parameters)
	if err != nil {
		t.Fatalf("Compile(finish parameters) = %v", err)
	}
	args := json.RawMessage(`{"output":{"summary":"ok"}}`)
	if err := schema.Validate(args); err != nil {
		t.Errorf("finish parameters refuse %s: %v", args, err)
	}
	if err := schema.Validate(json.RawMessage(`{"output":{}}`)); err == nil {
		t.Errorf("finish parameters accept an output without the required summary")
	}
	var fa FinishArgs
	if err := json.Unmarshal(args, &fa); err != nil || r.Finish(fa.Output) != nil {
		t.Errorf("Finish(FinishArgs from %s) failed: %v", args, err)
	}
	if r.Tools() != nil {
		t.Errorf("Tools() after finish = %+v; want none", r.Tools())
	}
}
