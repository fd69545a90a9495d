package fakeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/fleetd/fleetd/fakeapi"
)

func ExampleServer() {
	s := fakeapi.New(fakeapi.Config{})
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	defer s.Close()

	body := `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"please reply with PINEAPPLE"}]}`
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&msg)

	fmt.Println(msg.Content[0].Text)
	fmt.Println(s.Requests()[0].Prompt)
	// Output:
	// ECHO: please reply with PINEAPPLE
	// please reply with PINEAPPLE
}

// The same fake answers Codex's protocol, OpenAI Responses, with the same
// rules; the recorded request names its protocol.
func ExampleServer_responses() {
	s := fakeapi.New(fakeapi.Config{})
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	defer s.Close()

	body := `{"model":"fake-model","input":[
	 {"role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]},
	 {"role":"user","content":[{"type":"input_text","text":"please reply with MANGO"}]}]}`
	resp, err := http.Post(s.URL()+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)

	r := s.Requests()[0]
	fmt.Println(out.Output[0].Content[0].Text)
	fmt.Println(r.Protocol, r.Prompt)
	// Output:
	// ECHO: please reply with MANGO
	// responses please reply with MANGO
}
