package roles

// KindOpenCode is OpenCode (sst's opencode, measured with 1.18.33): a
// role of "kind": "opencode" runs its agents in OpenCode's TUI, each with
// its own config directory that fleetd writes (herdrbridge.OpenCode).
const KindOpenCode = "opencode"

// OpenCodeBoundaryVars are the variables that take OpenCode off the
// user's own login (the providers `opencode auth login` signed in to):
// a provider's API key or endpoint from the environment, which OpenCode
// reads for every provider it knows (models.dev's env lists), cloud
// credentials it would bill to, and the variables that hand OpenCode a
// config or credentials of their own. A gateway role's endpoint goes in
// the config fleetd writes for the agent (a "fleet" provider whose key
// is the pane's ANTHROPIC_API_KEY), not in these.
var OpenCodeBoundaryVars = []string{
	// Anthropic, OpenAI, Google and the other providers' keys and
	// endpoints that OpenCode 1.18.33 reads from the environment.
	"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN",
	"OPENAI_API_KEY", "OPENAI_BASE_URL",
	"GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
	"OPENROUTER_API_KEY", "GROQ_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY",
	"TOGETHER_API_KEY", "FIREWORKS_API_KEY", "CEREBRAS_API_KEY",
	// Amazon Bedrock, Azure and Google Vertex AI, and their credentials.
	"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AZURE_API_KEY", "AZURE_RESOURCE_NAME",
	"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_VERTEX_PROJECT",
	// OpenCode's own: its Zen key, credentials or a config passed in
	// whole (which may name any provider and endpoint).
	"OPENCODE_API_KEY", "OPENCODE_AUTH_CONTENT", "OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT",
}

func init() {
	registerKind(KindOpenCode, kindSpec{
		// OpenCode's --model is "provider/model" (a gateway role's
		// provider is "fleet", which fleetd writes into the agent's
		// config): a bare model name is refused with a toast, and the
		// TUI then skips opening the --session it was given.
		command: func(model bool) []string {
			if model {
				return []string{"opencode", ResumePlaceholder, "--model", "{model}"}
			}
			return []string{"opencode", ResumePlaceholder}
		},
		// opencode --session ses_… continues a session (its exit prints
		// "Continue opencode -s <id>").
		resume:   "--session",
		boundary: OpenCodeBoundaryVars,
		// Its TUI's /new (alias /clear) and /compact (alias /summarize).
		commands: []string{"/new", "/compact"},
	})
}
