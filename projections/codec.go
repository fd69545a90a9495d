package projections

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// encode is json.Marshal done by the v2 encoder with v1's semantics: the
// same bytes (the rows' readers — claudehook, natsauth, the dashboard,
// `nats kv get` — see no change) in about half the time. Every row a
// fold changes is encoded, and a checkpoint is the whole state.
func encode(v any) ([]byte, error) { return jsonv2.Marshal(v, jsonv1.DefaultOptionsV1()) }

// decode is json.Unmarshal the same way, for what encode wrote: a turn
// read back on a cache miss, a checkpoint on restart.
func decode(data []byte, v any) error { return jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1()) }
