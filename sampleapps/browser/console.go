package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/runtime/aci/sdui"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// ConsoleTitle is the console's title.
const ConsoleTitle = "浏览器控制台"

// ConsoleUI is console_ui: the console's aci-sdui-v1 snapshot (as JSON
// text in "snapshot") and its title.
func (b *Browser) ConsoleUI() wire.Bundle {
	b.mu.Lock()
	t := b.activeTabLocked()
	cur, title := "(no page)", ""
	if t != nil && t.page != nil {
		cur, title = t.page.url, t.page.title
	}
	capturing, ntabs, msg := b.capturing, len(b.tabs), b.console
	events := b.events[max(0, len(b.events)-5):]
	findText := b.find.text
	b.mu.Unlock()
	s := sdui.Snapshot{
		Title: ConsoleTitle, Subtitle: "Go HTML engine", UpdatedAt: b.now(), SchemaVersion: sdui.SchemaVersion,
		Components: []sdui.Component{
			{Type: sdui.Heading, Text: "当前页面"},
			{Type: sdui.Card, Title: title, Body: cur},
			{Type: sdui.Text, Text: fmt.Sprintf("%d tab(s); request capture %s", ntabs, onOff(capturing))},
			{Type: sdui.Input, Key: "url", Label: "网址", Placeholder: "https://", Action: "open"},
			{Type: sdui.Button, Action: "read", Label: "读取 HTML"},
			{Type: sdui.Button, Action: "crawl", Label: "抓取文本"},
			{Type: sdui.Divider},
			{Type: sdui.Input, Key: "find", Label: "查找", Placeholder: "text", Value: findText, Action: "find"},
			{Type: sdui.Button, Action: "find_next", Label: "下一个"},
			{Type: sdui.Button, Action: "find_clear", Label: "清除查找"},
			{Type: sdui.Divider},
			{Type: sdui.Button, Action: "nav_back", Label: "后退"},
			{Type: sdui.Button, Action: "nav_forward", Label: "前进"},
			{Type: sdui.Button, Action: "nav_reload", Label: "刷新"},
			{Type: sdui.Button, Action: "capture_toggle", Label: "切换抓包"},
			{Type: sdui.Button, Action: "capture_clear", Label: "清空抓包"},
			{Type: sdui.Spacer},
			{Type: sdui.Heading, Text: "最近事件"},
		},
	}
	for _, e := range events {
		s.Components = append(s.Components, sdui.Component{Type: sdui.ListItem, Text: e.Type + " " + e.URL})
	}
	if msg != "" {
		s.Components = append(s.Components, sdui.Component{Type: sdui.Text, Text: "上次操作：" + msg})
	}
	return wire.Bundle{"snapshot": wire.String(jsonText(s)), "title": wire.String(ConsoleTitle)}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ConsoleAction is console_action: apply one of the console's actions.
// An input's text is read under either spelling (its key or "value"), so
// both of upstream's consoles work. The answer says what happened; an
// unknown action is ok false (upstream said ok).
func (b *Browser) ConsoleAction(ctx context.Context, action, payload string) (wire.Bundle, error) {
	if action == "" {
		return nil, badRequest("no action")
	}
	if strings.TrimSpace(payload) != "" {
		var m map[string]any
		if json.Unmarshal([]byte(payload), &m) != nil {
			return nil, badRequest("payload must be a JSON object")
		}
	}
	ok, msg := true, ""
	fail := func(err error) { ok, msg = false, err.Error() }
	switch action {
	case "open":
		u, has := sdui.Value(payload, "url")
		if !has || strings.TrimSpace(u) == "" {
			ok, msg = false, "请输入网址 (enter a URL)"
			break
		}
		r, err := b.Open(ctx, u, "")
		if err != nil {
			fail(err)
			break
		}
		ok = r["ready"].BoolVal()
		msg = "opened " + r["url"].Str()
		if w, has := r["warn"]; has {
			msg = w.Str()
		}
	case "read":
		if r, err := b.Read("full"); err != nil {
			fail(err)
		} else {
			msg = fmt.Sprintf("read %d characters of HTML", len(r["html"].Str()))
		}
	case "crawl":
		if r, err := b.Crawl(); err != nil {
			fail(err)
		} else {
			msg = fmt.Sprintf("%d links", r["link_count"].IntVal())
		}
	case "find":
		text, _ := sdui.Value(payload, "find")
		if r, err := b.Find(text, "find", true); err != nil {
			fail(err)
		} else {
			msg = fmt.Sprintf("%d matches", r["count"].IntVal())
		}
	case "find_next":
		r, err := b.Find("", "next", true)
		if err != nil {
			fail(err)
		} else {
			msg = fmt.Sprintf("match %d of %d", r["index"].IntVal()+1, r["count"].IntVal())
		}
	case "find_clear":
		b.Find("", "clear", true)
		msg = "cleared"
	case "nav_back", "nav_forward", "nav_reload":
		if r, err := b.Nav(ctx, strings.TrimPrefix(action, "nav_")); err != nil {
			fail(err)
		} else {
			msg = r["url"].Str()
		}
	case "capture_toggle":
		b.mu.Lock()
		b.capturing = !b.capturing
		msg = "capture " + onOff(b.capturing)
		b.mu.Unlock()
	case "capture_clear":
		b.Capture("clear", 0, "")
		msg = "capture cleared"
	case "js", "screenshot":
		ok, msg = false, Unsupported(action, "there is no renderer or JavaScript engine").Error()
	default:
		ok, msg = false, "未知 action (unknown action): "+clip(action)
	}
	b.mu.Lock()
	b.console = msg
	b.mu.Unlock()
	return wire.Bundle{"ok": wire.Bool(ok), "action": wire.String(action), "message": wire.String(msg)}, nil
}
