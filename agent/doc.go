// Package agent is a key agent for Crypt4GH: a process that holds
// unlocked secret keys and opens header packets with them for its
// clients, over a Unix socket, so that no other process reads a secret
// key or a passphrase. It speaks the protocol of the agent of samtools'
// htslib-crypt4gh plug-in, so that one agent serves samtools (through the
// plug-in's crypt4gh: URLs) and the commands of this module, and this
// module's [Client] works with the plug-in's agent too.
//
// # Server
//
// [New] makes an [Agent] with a key pair of its own, [Agent.Add] gives it
// secret keys (with a lifetime), [Listen] makes its socket (mode 0600 in a
// folder of mode 0700) and [Agent.Serve] serves it. Every connection's
// peer credentials are checked: the agent serves only its own user. The
// keys are held in memory locked against swapping where the system allows
// and erased by [Agent.Close].
//
// # Client
//
// [Client] is a [keys.Opener]: pass it where a *keys.SecretKey opens
// headers (header.Header.Decrypt, c4gh.NewReader, mount.Options.Key).
// [FromEnv] makes one from CRYPT4GH_AGENT and CRYPT4GH_PK, the variables
// that the agent gives the command it runs.
//
// # Protocol
//
// Messages are framed by a 4-byte little-endian length. The agent sends a
// hello (type 1, version 1); the client answers with a hello and an
// ephemeral X25519 public key; both derive libsodium crypto_kx session
// keys. Then each message is a 12-byte nonce and a ChaCha20-Poly1305 seal
// of {2-byte type, body}: type 2 opens a header packet (reply: type 2 and
// the payload, or type 4 when no key opens it), type 3 seals a payload for
// one of the agent's public keys. Types from 0x100 are this module's
// (errors with their class, list, lock, unlock, stop); the plug-in never
// sends them.
package agent
