// Package session keeps a session as an append-only log of typed events —
// the one record of a conversation — and derives the model's input from
// it.
//
// An Event is a fixed header (seq, time, session, turn, run, agent) plus a
// sealed Payload such as *UserMessage, *AssistantMessage or *ToolResult.
// Its JSON form, written by Event.MarshalJSON and AppendEventJSON and read
// by DecodeEvent, is the wire format of every store, of exports and of the
// CLI's --json output; types a newer rein wrote survive as *Unknown.
//
// Derive (or the incremental Deriver) projects events to []llm.Message.
// The projection is where tool calls are paired with results: a call
// without one is answered, an orphan result dropped, a repeated id renamed
// (DedupeID); Deriver.Repairs reports those repairs for the loop to record,
// and Deriver.DedupeCalls renames a fresh response's calls before they are
// logged. The Text, Repair and Detail constants are every text and kind
// that pairing and crash repair write.
// RepairEvents and RepairLog close a turn a crash left open; Balanced
// checks a log's invariants. A Store keeps logs: MemStore here,
// session/jsonl and session/sqlite on disk, session/postgres in a
// PostgreSQL server shared by many hosts, all passing the
// session/sessiontest suite. Fork, Follow, Export and Import work on any
// Store. Durability is the sync setting the durable stores share, and
// Broadcaster the Notifier they embed to wake followers.
//
// Quick start:
//
//	st := session.NewMemStore()
//	id, _ := st.Create(ctx, nil)
//	_ = st.Append(ctx, id,
//		session.Event{Seq: 1, Time: time.Now(), Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
//		session.Event{Seq: 2, Time: time.Now(), Turn: "t1", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "hi"}}}},
//	)
//	var d session.Deriver
//	for e, err := range st.Events(ctx, id, 0) {
//		if err != nil {
//			return err
//		}
//		d.Add(e)
//	}
//	msgs := d.Messages() // one user message: "hi"; keep d and Add new events as they are appended
//
// Messages are derived, never stored: context.message text is framed as
// <context source="…">…</context>, steering text follows a note saying it
// arrived while the model worked, and a compaction's summary stands in for
// the events it replaced. See Deriver for every rule.
package session
