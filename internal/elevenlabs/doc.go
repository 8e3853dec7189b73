// Package elevenlabs is a client of the ElevenLabs text-to-speech API,
// standard library only.
//
// The one endpoint choir uses:
//
//	POST {endpoint}/text-to-speech/{voice_id}?output_format=opus_48000_64
//	xi-api-key: <key>
//	Content-Type: application/json
//	{"text":"...","model_id":"eleven_multilingual_v2",
//	 "voice_settings":{"stability":0.5,"similarity_boost":0.75,"style":0,
//	                   "use_speaker_boost":true,"speed":1}}
//
// where endpoint is the provider's, https://api.elevenlabs.io/v1 by
// default. A success is the audio itself (audio/mpeg for mp3_*, Ogg Opus
// for opus_*, raw little-endian PCM for pcm_*, G.711 for ulaw_8000 and
// alaw_8000). A failure is JSON: {"detail":{"status":"invalid_api_key",
// "message":"..."}} (newer answers say "code" and "type" instead of
// "status"), or FastAPI's validation list {"detail":[{"loc":[...],
// "msg":"...","type":"..."}]} for a 422. A 429 (too_many_concurrent_requests,
// system_busy) may carry Retry-After.
//
// Every failure is an *APIError (status, code, message, retry-after); the
// key never appears in one.
package elevenlabs
