package catalog_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

func ExampleAssign() {
	names, err := catalog.Assign([]catalog.ToolID{
		{Plugin: "alarm", Server: "alarm", Tool: "alarm_create"},
		{Plugin: "a.b", Server: "s", Tool: "t"},
		{Plugin: "a_b", Server: "s", Tool: "t"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(names[catalog.ToolID{Plugin: "alarm", Server: "alarm", Tool: "alarm_create"}])
	fmt.Println(names[catalog.ToolID{Plugin: "a.b", Server: "s", Tool: "t"}])
	fmt.Println(names[catalog.ToolID{Plugin: "a_b", Server: "s", Tool: "t"}])
	// Output:
	// mcp__alarm__alarm__alarm_create
	// mcp__a_b__s__t_0b737e
	// mcp__a_b__s__t_74a108
}

func ExampleParseToolScope() {
	meta := json.RawMessage(`{"org.agentos":{"toolScope":[
		{"plugin":"calendar","tool":"event_create"},
		{"plugin":"alarm","tool":"alarm_create"},
		{"plugin":"alarm","tool":"alarm_create"}]}}`)
	scope, present, err := catalog.ParseToolScope(meta)
	fmt.Println(scope, present, err)

	_, _, err = catalog.ParseToolScope(json.RawMessage(`{"org.agentos":{"toolScope":[{"plugin":"alarm"}]}}`))
	fmt.Println(err)
	// Output:
	// [{alarm alarm_create} {calendar event_create}] true <nil>
	// invalid_params: toolScope[0].tool is missing
}

func ExampleCatalog_Lookup() {
	c, err := catalog.New([]catalog.Entry{
		{Kind: catalog.KindPlugin, Source: catalog.ToolID{Plugin: "notes", Server: "notes", Tool: "note_delete"}, Risk: catalog.RiskWrite, Enabled: true},
	})
	if err != nil {
		panic(err)
	}
	_, err = c.Lookup("mcp__notes__notes__note_delete", catalog.View{Mode: catalog.ModeReadOnly})
	fmt.Println(err)
	e, err := c.Lookup("mcp__notes__notes__note_delete", catalog.View{Mode: catalog.ModeDefault})
	fmt.Println(e.Source, err)
	// Output:
	// tool_not_in_catalog: Tool mcp__notes__notes__note_delete is not available.
	// notes/notes/note_delete <nil>
}
