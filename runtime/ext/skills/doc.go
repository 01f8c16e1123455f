// Package skills holds the pure rules of plugin skills (spec §6.5): the
// SKILL.md frontmatter parser, skill name and description cleaning, skill
// ids, the read_skill tool's argument and path rules, result and error
// texts, and the skills section of the system prompt.
//
// Skills are third-party text. Everything here treats them as data: the
// prompt section says so, read_skill results are prefixed with a line
// that says so, and no function here reads files itself.
package skills
