package natslite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/internal/natslite"
)

func outs(n int, prefix string) []natslite.Out {
	var o []natslite.Out
	for i := range n {
		h := natslite.Header{}
		h.Set("Nats-Msg-Id", fmt.Sprintf("%s-%d", prefix, i))
		o = append(o, natslite.Out{Subject: "t.x", Header: h, Data: fmt.Appendf(nil, "%s %d", prefix, i)})
	}
	return o
}

// PublishAll stores its messages in order with one round trip, and keeps
// them in order when the stream comes only while they wait: what was
// sent before the stream answered is sent again, and the message ids
// keep anything stored twice out.
func TestPublishAllKeepsTheOrderAndLosesNothing(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, pipelined := range []bool{false, true} {
		c, err := natslite.Connect(ctx, srv.ClientURL(), natslite.Options{Pipelined: pipelined})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		name := fmt.Sprintf("T%v", pipelined)
		// No stream yet: the batch waits, retrying, until one is made.
		done := make(chan error, 1)
		var acks []natslite.PubAck
		go func() {
			var err error
			acks, err = c.PublishAll(ctx, outs(5, name), 20*time.Millisecond)
			done <- err
		}()
		time.Sleep(150 * time.Millisecond)
		s, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"t.x"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || len(acks) != 5 {
			t.Fatalf("pipelined %v: %d acks, %v", pipelined, len(acks), err)
		}
		// And with the stream there, a batch is one write, stored in order.
		more, err := c.PublishAll(ctx, outs(3, name+"-b"), 20*time.Millisecond)
		if err != nil || len(more) != 3 {
			t.Fatalf("second batch: %d acks, %v", len(more), err)
		}
		want := []string{}
		for i := range 5 {
			want = append(want, fmt.Sprintf("%s %d", name, i))
		}
		for i := range 3 {
			want = append(want, fmt.Sprintf("%s-b %d", name, i))
		}
		for i, w := range want {
			m, err := s.GetMsg(ctx, uint64(i+1))
			if err != nil || string(m.Data) != w {
				t.Fatalf("message %d: %q, %v; want %q (stored in order, once)", i+1, m.Data, err, w)
			}
		}
		if info, _ := s.Info(ctx); info.State.Msgs != uint64(len(want)) {
			t.Errorf("the stream holds %d messages, want %d", info.State.Msgs, len(want))
		}
		srv.JS.DeleteStream(ctx, name)
	}
}

// Replies are matched to their requests whatever order they come in: a
// request sent first and awaited last gets its own reply.
func TestAwaitMatchesRepliesOutOfOrder(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, s := range []string{"a", "b"} {
		sub, err := srv.NC.Subscribe("echo."+s, func(m *nats.Msg) { m.Respond(append([]byte("re "), m.Data...)) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	srv.NC.Flush()
	c, err := natslite.Connect(ctx, srv.ClientURL(), natslite.Options{Pipelined: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ra, err := c.Send(ctx, "echo.a", nil, []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := c.Send(ctx, "echo.b", nil, []byte("2"))
	if m, err := c.Await(ctx, rb); err != nil || string(m.Data) != "re 2" {
		t.Errorf("b: %q, %v", m.Data, err)
	}
	if m, err := c.Await(ctx, ra); err != nil || string(m.Data) != "re 1" {
		t.Errorf("a: %q, %v", m.Data, err)
	}
	if _, err := c.Request(ctx, "nobody.here", nil, nil); !errors.Is(err, natslite.ErrNoResponders) {
		t.Errorf("a request nobody answers: %v, want ErrNoResponders", err)
	}
}

// A pipelined connection with a token to a server on this machine sends
// its CONNECT, SUB, PING and first request in one write, before the
// server's INFO: a server that says nothing until it has read them still
// answers. With a nonce to sign, the client waits for the INFO and sends
// nothing before it.
func TestAPipelinedConnectionWritesBeforeTheINFOOnlyWhenItMay(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		// Silent until the client speaks: a client that waits for the
		// INFO before writing waits here for good.
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		line, err := br.ReadString('\n')
		if err != nil {
			first <- ""
			return
		}
		first <- line
		c.SetReadDeadline(time.Time{})
		io.WriteString(c, `INFO {"server_id":"s","headers":true,"max_payload":1048576,"auth_required":true}`+"\r\n")
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			switch verb, args, _ := strings.Cut(strings.TrimSpace(line), " "); verb {
			case "PING":
				io.WriteString(c, "PONG\r\n")
			case "PUB":
				f := strings.Fields(args) // subject reply size
				n, _ := strconv.Atoi(f[2])
				body := make([]byte, n+2)
				io.ReadFull(br, body)
				fmt.Fprintf(c, "MSG %s 1 %d\r\nre %s\r\n", f[1], n+3, body[:n])
			}
		}
	}()
	c, err := natslite.Connect(ctx, "nats://"+ln.Addr().String(), natslite.Options{Pipelined: true, Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Request(ctx, "echo", nil, []byte("hi"))
	if err != nil || string(m.Data) != "re hi" {
		t.Fatalf("request before the INFO: %q, %v; want %q", m.Data, err, "re hi")
	}
	if line := <-first; !strings.HasPrefix(line, "CONNECT ") {
		t.Errorf("first line the server read: %q, want the CONNECT", line)
	}

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	said := make(chan int, 1)
	go func() {
		c, err := ln2.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, _ := c.Read(make([]byte, 1024))
		said <- n
	}()
	sign := func([]byte) ([]byte, error) { return []byte("sig"), nil }
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := natslite.Connect(short, "nats://"+ln2.Addr().String(), natslite.Options{Pipelined: true, NKey: "UKEY", Sign: sign, Timeout: time.Second}); err == nil {
		t.Error("connected to a server that never sent its INFO, with a nonce to sign")
	}
	if n := <-said; n != 0 {
		t.Errorf("the client wrote %d bytes before the INFO with a nonce to sign; want none", n)
	}
}
