package leadshim

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/micro"
)

// ServiceName is the micro service `nats micro ls` lists.
const ServiceName = "fleet"

// ServiceSubjects are the micro endpoints' subjects. They live under
// fleetd., not fleet., so the FLEET stream (fleet.>) never stores a request.
var ServiceSubjects = map[string]string{
	"send": "fleetd.send", "turn": "fleetd.turn", "roster": "fleetd.roster", "sessions": "fleetd.sessions",
}

// addService registers the micro service. Handlers that may block (send,
// turn) answer from goroutines wg owns, so one slow turn never holds up
// the endpoint's other requests.
func (s *Server) addService(ctx context.Context, wg *sync.WaitGroup) (micro.Service, error) {
	svc, err := micro.AddService(s.cfg.NC, micro.Config{
		Name: ServiceName, Version: s.cfg.Version,
		Description: "fleetd control: send a turn, get or wait for a turn, roster, sessions",
	})
	if err != nil {
		return nil, fmt.Errorf("leadshim: micro service: %w", err)
	}
	async := func(fn func(context.Context, micro.Request)) micro.Handler {
		return micro.HandlerFunc(func(req micro.Request) {
			wg.Go(func() { fn(ctx, req) })
		})
	}
	eps := []struct {
		name string
		h    micro.Handler
	}{
		{"send", async(func(ctx context.Context, req micro.Request) {
			if int64(len(req.Data())) > s.cfg.MaxBody {
				respond(req, answer{}, fail(http.StatusRequestEntityTooLarge, "too_large", "body exceeds %d bytes", s.cfg.MaxBody))
				return
			}
			ans, aerr := s.sendRaw(ctx, bytes.NewReader(req.Data()))
			respond(req, ans, aerr)
		})},
		{"turn", async(func(ctx context.Context, req micro.Request) {
			var q TurnQuery
			if err := decodeStrict(req.Data(), &q); err != nil {
				respond(req, answer{}, fail(http.StatusBadRequest, "bad_json", "turn query: %v", err))
				return
			}
			ans, aerr := s.turn(ctx, q)
			respond(req, ans, aerr)
		})},
		{"roster", micro.HandlerFunc(func(req micro.Request) {
			respond(req, answer{status: http.StatusOK, body: s.roster()}, nil)
		})},
		{"sessions", micro.HandlerFunc(func(req micro.Request) {
			respond(req, answer{status: http.StatusOK, body: s.cfg.Views.Sessions()}, nil)
		})},
	}
	for _, ep := range eps {
		if err := svc.AddEndpoint(ep.name, ep.h, micro.WithEndpointSubject(ServiceSubjects[ep.name])); err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("leadshim: micro endpoint %s: %w", ep.name, err)
		}
	}
	return svc, nil
}

// respond answers with the same JSON as HTTP; an error also sets the
// micro error headers (code = the HTTP status).
func respond(req micro.Request, ans answer, aerr *apiError) {
	if aerr != nil {
		_ = req.Error(strconv.Itoa(aerr.status), aerr.body.Message, jsonBody(Error{Err: aerr.body}))
		return
	}
	_ = req.Respond(jsonBody(ans.body), micro.WithHeaders(micro.Headers{"Fleet-Status": {strconv.Itoa(ans.status)}}))
}
