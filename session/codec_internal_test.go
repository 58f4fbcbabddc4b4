package session

import (
	"reflect"
	"testing"
)

// The explicit wire struct of ToolResult must keep up with the type.
func TestToolResultWireListsEveryField(t *testing.T) {
	rt, wt := reflect.TypeFor[ToolResult](), reflect.TypeFor[toolResultWire]()
	if rt.NumField() != wt.NumField() {
		t.Fatalf("ToolResult has %d fields, toolResultWire %d: add the new field to the wire struct and its conversions", rt.NumField(), wt.NumField())
	}
	for i := range rt.NumField() {
		rf, wf := rt.Field(i), wt.Field(i)
		if rf.Name != wf.Name || rf.Tag != wf.Tag {
			t.Errorf("field %d: ToolResult has %s `%s`, toolResultWire %s `%s`", i, rf.Name, rf.Tag, wf.Name, wf.Tag)
		}
	}
}
