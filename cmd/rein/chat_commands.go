package main

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
)

const chatHelp = "Enter send (steers a running turn) · Alt+Enter/Ctrl+J new line · Up/Down earlier prompts · PgUp/PgDn/Shift+Up/wheel scroll\n" +
	"Esc cancel · Ctrl+O tool output · Ctrl+R reasoning · Ctrl+C cancel, clear, or twice to quit\n" +
	"/model [PROVIDER/NAME] show or switch the model · /session the session id · /compact [focus] summarise older turns · /clear new session · /quit"

// command runs a slash command.
func (m *chatModel) command(text string) (tea.Model, tea.Cmd) {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help":
		m.notice(chatHelp)
	case "/quit", "/exit":
		return m, tea.Quit
	case "/session":
		m.notice(fmt.Sprintf("session %s in %s (workspace %s)", m.setup.agent.Session(), m.app.storeShown(), m.setup.root))
	case "/compact":
		return m, m.compactCmd(arg)
	case "/clear":
		m.clear()
	case "/model":
		m.model(arg)
	default:
		m.notice("unknown command " + name + "; /help lists them")
	}
	return m, nil
}

func (m *chatModel) compactCmd(focus string) tea.Cmd {
	if m.running {
		m.notice("wait for the turn to end (or Esc) before /compact")
		return nil
	}
	m.setup.fire(context.Background(), &command.FireRequest{Event: "PreCompact", Trigger: "manual", Instructions: focus})
	m.running = true
	m.notice("compacting…")
	ag, send := m.setup.agent, m.send
	go func() {
		res, err := ag.Compact(context.Background(), &agent.CompactRequest{KeepSteps: 2, Instructions: focus})
		send(compactDoneMsg{res, err})
	}()
	return tick()
}

func (m *chatModel) clear() {
	if m.running {
		m.notice("wait for the turn to end (or Esc) before /clear")
		return
	}
	m.setup.fire(context.Background(), &command.FireRequest{Event: "SessionEnd", Reason: "clear"})
	if err := m.setup.agent.Reset(context.Background()); err != nil {
		m.fail("clear: " + err.Error())
		return
	}
	m.setup.fire(context.Background(), &command.FireRequest{Event: "SessionStart", Source: "clear"})
	m.blocks, m.top, m.firstNew = nil, nil, 0
	m.usage, m.cost, m.lastIn = llm.Usage{}, 0, 0
	m.notice("new session " + string(m.setup.agent.Session()))
}

func (m *chatModel) model(spec string) {
	if spec == "" {
		m.notice("model " + m.setup.target.String() + " (switch with /model PROVIDER/NAME; see 'rein models')")
		return
	}
	if m.running {
		m.notice("wait for the turn to end (or Esc) before switching models")
		return
	}
	if err := m.switchModel(spec); err != nil {
		m.fail("model: " + err.Error())
		return
	}
	m.notice("model " + m.setup.target.String())
}

// switchBaseURL is the --base-url a switch to spec keeps: the chat's own
// when spec's provider is the one it was given for (or shares its
// address, as openai and openai-responses do). Switching a chat started
// with --base-url to another provider is refused: its requests, and the
// key, would go to a host the person did not choose.
func switchBaseURL(cur target, baseURL, spec string) (string, error) {
	name, _, _ := strings.Cut(spec, "/")
	if baseURL == "" || name == cur.provider.name {
		return baseURL, nil
	}
	if p, ok := lookupProvider(name); ok && p.baseURLEnv != "" && p.baseURLEnv == cur.provider.baseURLEnv {
		return baseURL, nil
	}
	return "", usageErrorf("not switching to %s: this chat was started with --base-url for %s, and %s would send its requests to another host; "+
		"start a chat with --model %s and the --base-url of that provider instead", spec, cur.provider.name, name, spec)
}

// switchModel rebuilds the agent on the same session with another model,
// keeping the provider's address and key.
func (m *chatModel) switchModel(spec string) error {
	baseURL, err := switchBaseURL(m.setup.target, m.flags.baseURL, spec)
	if err != nil {
		return err
	}
	if _, err := resolveTarget(spec, baseURL, m.app.cfg, m.app.getenv); err != nil {
		return err
	}
	f := *m.flags
	f.model, f.baseURL, f.fork, f.newSession = spec, baseURL, "", ""
	f.session = string(m.setup.agent.Session())
	if err := m.setup.Close(); err != nil {
		return err
	}
	s, err := m.app.build(context.Background(), &f, m.ap, true)
	if err != nil {
		// Reopen the old model so the chat can go on.
		old := *m.flags
		old.session, old.fork, old.newSession = f.session, "", ""
		if s2, err2 := m.app.build(context.Background(), &old, m.ap, true); err2 == nil {
			m.setup = s2
		}
		return err
	}
	m.setup = s
	m.flags.model = spec
	return nil
}
