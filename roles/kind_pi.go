package roles

// KindPi is the kind of Pi agents (@mariozechner/pi-coding-agent 0.73.1):
// fleetd gives each its own agent directory (PI_CODING_AGENT_DIR) holding
// its settings, a gateway role's model provider and fleetd's extension,
// whose handlers run fleetd's hooks.
const KindPi = "pi"

// PiBoundaryVars are the variables Pi 0.73.1 reads that take it off the
// logins it keeps in its auth.json (its /login subscriptions): a provider's
// API key, Azure's endpoint, or the cloud credentials Bedrock and Vertex
// bill to. Read from its source (pi-ai's env-api-keys.js and providers).
// GitHub's GH_TOKEN and GITHUB_TOKEN, which Pi's Copilot provider also
// takes, are left out: a developer's shell often has them for git, and
// Copilot is itself a subscription. Pi reads no base-URL variable of
// Anthropic's or OpenAI's: each model names its endpoint, so a gateway
// role's base_url goes in the models.json fleetd writes for the agent.
var PiBoundaryVars = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY",
	"AZURE_OPENAI_API_KEY", "AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_RESOURCE_NAME",
	"GEMINI_API_KEY", "GOOGLE_CLOUD_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
	"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"DEEPSEEK_API_KEY", "GROQ_API_KEY", "CEREBRAS_API_KEY", "XAI_API_KEY", "OPENROUTER_API_KEY",
	"AI_GATEWAY_API_KEY", "ZAI_API_KEY", "MISTRAL_API_KEY", "MINIMAX_API_KEY", "MINIMAX_CN_API_KEY",
	"MOONSHOT_API_KEY", "HF_TOKEN", "FIREWORKS_API_KEY", "OPENCODE_API_KEY", "KIMI_API_KEY",
	"CLOUDFLARE_API_KEY", "XIAOMI_API_KEY", "XIAOMI_TOKEN_PLAN_CN_API_KEY",
	"XIAOMI_TOKEN_PLAN_AMS_API_KEY", "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
}

func init() {
	registerKind(KindPi, kindSpec{
		command: func(model bool) []string {
			if model {
				return []string{"pi", "{resume}", "--model", "{model}"}
			}
			return []string{"pi", "{resume}"}
		},
		// "--session <id>": Pi finds the session by its id in the
		// session directory fleetd gives all its Pi agents.
		resume: "--session", boundary: PiBoundaryVars,
		// Pi starts a new session with /new; fleetd's extension adds
		// /clear, which does the same, for leads (and fresh_context
		// roles) that speak Claude Code's.
		// Pi 0.73.1 leaves MCP out on purpose (its README: "No MCP.
		// … build an extension that adds MCP support"): a main's
		// tools come from fleetd's extension, which speaks MCP to the
		// agent's `fleetd mcp` and gives Pi each of its tools.
		commands: []string{"/clear", "/new", "/compact"},
	})
}
