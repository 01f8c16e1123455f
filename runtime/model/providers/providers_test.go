package providers

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/anthropic"
	"github.com/agentoslab/agentlab/runtime/model/openai"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("steps: [{text: scripted hello}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("steps: [{txt: x}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  model.Config
		want any // a provider type, or an error code
	}{
		{"openai", model.Config{Provider: OpenAI, Model: "m", Key: "k"}, &openai.Provider{}},
		{"anthropic", model.Config{Provider: Anthropic, Model: "m", Key: "k"}, &anthropic.Provider{}},
		{"scripted without script", model.Config{Provider: Scripted}, &script.Provider{}},
		{"scripted with script", model.Config{Provider: Scripted, Script: good}, &script.Provider{}},
		{"openai without key", model.Config{Provider: OpenAI, Model: "m"}, errcode.ModelNotConfigured},
		{"anthropic without key", model.Config{Provider: Anthropic, Model: "m"}, errcode.ModelNotConfigured},
		{"anthropic without model", model.Config{Provider: Anthropic, Key: "k"}, errcode.ModelNotConfigured},
		{"no provider", model.Config{}, errcode.ModelNotConfigured},
		{"unknown provider", model.Config{Provider: "gemini", Key: "k"}, errcode.ModelNotConfigured},
		{"bad script", model.Config{Provider: Scripted, Script: bad}, errcode.ModelNotConfigured},
		{"missing script", model.Config{Provider: Scripted, Script: filepath.Join(dir, "none.yaml")}, errcode.ModelNotConfigured},
	} {
		p, err := Open(tc.cfg, nil)
		switch want := tc.want.(type) {
		case errcode.Code:
			if !errors.Is(err, want) || p != nil {
				t.Errorf("%s: Open = %v, %v; want %s", tc.name, p, err, want)
			}
		default:
			if err != nil {
				t.Errorf("%s: Open: %v", tc.name, err)
			} else if got, w := typeName(p), typeName(want); got != w {
				t.Errorf("%s: provider %s, want %s", tc.name, got, w)
			}
		}
	}
}

func TestOpenScriptedServesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte("steps: [{text: scripted hello}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Open(model.Config{Provider: Scripted, Script: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.Text != "scripted hello" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if ev, err := s.Next(); err != nil || ev.Kind != model.Done {
		t.Fatalf("second event %+v, %v", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after Done: %v", err)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *openai.Provider:
		return "openai"
	case *anthropic.Provider:
		return "anthropic"
	case *script.Provider:
		return "script"
	}
	return "other"
}
