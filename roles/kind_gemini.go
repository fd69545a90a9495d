package roles

// KindGemini is the kind of Gemini CLI agents (@google/gemini-cli 0.61.0):
// fleetd gives each its own GEMINI_CLI_HOME holding a settings.json with
// fleetd's hooks, its model and, for a gateway role, the API-key login
// the role's key and base_url go with.
const KindGemini = "gemini"

// GeminiBoundaryVars are the variables Gemini CLI 0.61.0 reads that take
// it off a Google login: an API key (GOOGLE_API_KEY wins over
// GEMINI_API_KEY), another endpoint, Vertex AI or Code Assist switches,
// and the Google Cloud project and credentials they bill to. Read from
// its bundle (process.env reads of its auth and content generator).
// GOOGLE_CLOUD_LOCATION is left out: a region switches nothing alone.
var GeminiBoundaryVars = []string{
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
	"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT_ID",
	"GOOGLE_CLOUD_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "GEMINI_CLI_USE_COMPUTE_ADC",
}

func init() {
	registerKind(KindGemini, kindSpec{
		command: func(model bool) []string {
			if model {
				return []string{"gemini", "{resume}", "--model", "{model}"}
			}
			return []string{"gemini", "{resume}"}
		},
		// "--resume <id>": Gemini keeps its sessions per working
		// directory under the agent's own GEMINI_CLI_HOME, so a restart
		// in the same directory finds it.
		resume: "--resume", boundary: GeminiBoundaryVars,
		// Gemini reads its endpoint from this variable (the SDK adds
		// /v1beta); the settings fleetd writes pick the API-key login.
		baseURLVar: "GOOGLE_GEMINI_BASE_URL",
		// Gemini compacts with /compress (it has no /compact).
		commands: []string{"/clear", "/compress"},
	})
}
