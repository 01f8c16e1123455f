package httpfail

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

func TestNewSetup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      model.Config
		wantErr  errcode.Code
		wantBase string
	}{
		{"no key", model.Config{Model: "m"}, errcode.ModelNotConfigured, ""},
		{"no model", model.Config{Key: "k"}, errcode.ModelNotConfigured, ""},
		{"default base", model.Config{Key: "k", Model: "m"}, "", "https://example.test/v1/"},
		{"trailing slashes", model.Config{Key: "k", Model: "m", BaseURL: "http://stub:8080/v1//"}, "", "http://stub:8080/v1/"},
		{"no slash", model.Config{Key: "k", Model: "m", BaseURL: "http://stub:8080"}, "", "http://stub:8080/"},
	}
	for _, tt := range tests {
		st, err := NewSetup("p", "https://example.test/v1", tt.cfg, SetupOptions{})
		if tt.wantErr != "" {
			if !errors.Is(err, tt.wantErr) || st != nil {
				t.Errorf("%s: %v, %+v; want %s", tt.name, err, st, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if st.BaseURL != tt.wantBase || st.Key != "k" || st.Model != "m" || st.Logger == nil ||
			st.Client == nil || st.Client.Provider != "p" || st.Client.HTTP == nil {
			t.Errorf("%s: %+v", tt.name, st)
		}
	}
}

func TestSendError(t *testing.T) {
	t.Parallel()
	own := errcode.New(errcode.ModelRateLimited, "provider returned 429")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"model error kept", context.Background(), own, own},
		{"wrapped model error", context.Background(), errors.Join(errors.New("sdk"), own), own},
		{"sdk failure", context.Background(), errors.New("marshal"), errcode.ModelProtocol},
		{"ended by ctx", cancelled, own, context.Canceled},
	}
	for _, tt := range tests {
		if got := SendError(tt.ctx, tt.err); !errors.Is(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

type sdkError struct{}

func (sdkError) Error() string { return "overloaded: <the request>" }

func TestStreamEnded(t *testing.T) {
	t.Parallel()
	inStream := func(err error) bool { var e sdkError; return errors.As(err, &e) }
	var m map[string]any
	undecodable := json.Unmarshal([]byte("{x"), &m)
	tests := []struct {
		name      string
		err       error
		want      errcode.Code
		keepCause bool
	}{
		{"clean end", nil, errcode.ModelStreamInterrupted, false},
		{"read failure", &ReadError{Err: io.ErrUnexpectedEOF}, errcode.ModelStreamInterrupted, true},
		{"error event", sdkError{}, errcode.ModelStreamInterrupted, false},
		{"undecodable", undecodable, errcode.ModelProtocol, true},
		{"anything else", errors.New("quotes the server"), errcode.ModelProtocol, false},
	}
	for _, tt := range tests {
		e := StreamEnded(tt.err, inStream)
		if e == nil || e.Code != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, e, tt.want)
			continue
		}
		if (e.Err != nil) != tt.keepCause {
			t.Errorf("%s: cause %v, kept want %v", tt.name, e.Err, tt.keepCause)
		}
	}
}
