// Package herdrschema validates herdr wire traffic — requests, responses
// and both event line formats — against herdr's published JSON schema
// (protocol 20, read in place from ../shared/herdr/herdr-api.schema.json,
// never copied). Tests hand its Validator to herdrtest and wrap clients'
// dialers with it.
//
// It lives apart from herdrtest so the fleetd binary, which embeds the
// herdr test server for `fleetd demo`, does not link a JSON-schema engine
// (its package init alone cost every `fleetd hook` run ~18 ms).
//
// herdrschema imports no fleetd package.
package herdrschema
