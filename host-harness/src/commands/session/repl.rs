//! The interactive session: a person plays the model, one command per line
//! (so it also runs from a pipe). A command that fails prints why and the
//! session goes on.

use std::io::Write;

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::Value;

use super::input::{Input, Inputs, Line, MAX_LINE_BYTES};
use super::{MAIN_AGENT, ProfileShell};
use crate::shell::names;
use crate::terminal::Escaping;
use crate::tokens::Tokenizer;
use lazy_tools::suggest::did_you_mean;

const COMMANDS: &[&str] = &[
    "tools", "call", "spawn", "agent", "next", "explain", "help", "quit", "exit",
];

const HELP: &str = "\
tools                  the tools the model sees on this agent's next request
call <tool> [<json>]   call a tool as the model (arguments default to {})
spawn <name>           start a child agent of this agent and act as it
agent [<path>]         act as another agent (main, main/worker); alone: list agents
next                   send the next request: tool count, size, system-prompt text
explain <tool>         which rule decides the tool's visibility for this agent
help                   this list
quit                   end the session (Ctrl-C too); --save writes its state";

pub struct Repl {
    session: ProfileShell,
    /// The agent the person is playing.
    agent: String,
    requests: usize,
    /// How many quarantined plugins the user has been told about.
    quarantines_told: usize,
}

/// What a line asked for.
enum Flow {
    Continue,
    Quit,
}

impl Repl {
    pub fn new(session: ProfileShell) -> Self {
        Self {
            session,
            agent: MAIN_AGENT.to_string(),
            requests: 0,
            quarantines_told: 0,
        }
    }

    /// The session, once the person is done (to save its state).
    pub fn into_session(self) -> ProfileShell {
        self.session
    }

    /// Reads commands until `quit`, Ctrl-C or the end of the input. With `prompt`
    /// (a terminal), shows the agent before each command.
    pub fn run(&mut self, input: &Inputs, out: &mut dyn Write, prompt: bool) -> Result<()> {
        // Tool names, descriptions, results and prompts come from catalogs, servers and
        // plugins: every byte of the session is shown, not obeyed.
        let mut escaping = Escaping::new(out);
        let out: &mut dyn Write = &mut escaping;
        writeln!(
            out,
            "session with plugins: {}. You are the model of agent `{}`; `help` lists commands.",
            if self.session.running.is_empty() {
                "none".to_string()
            } else {
                self.session.plugin_ids().join(", ")
            },
            self.agent
        )?;
        let mut number = 0usize;
        loop {
            if prompt {
                write!(out, "{}> ", self.agent)?;
                out.flush()?;
            }
            number += 1;
            let line = match input
                .next()
                .with_context(|| format!("reading line {number} of the input"))?
            {
                Input::Line(line) => line,
                Input::End => return Ok(()),
                Input::Interrupted => {
                    // After a prompt, the end of the session starts a line of its own.
                    writeln!(
                        out,
                        "{}interrupted: the session ends",
                        if prompt { "\n" } else { "" }
                    )?;
                    return Ok(());
                }
            };
            // A line that cannot be a command is said, and the session goes on: it ends
            // only at the end of the input, Ctrl-C or `quit`, so nothing loaded is lost to a
            // typo.
            let flow = match line {
                Line::Text(text) => self.command(text.trim(), out),
                Line::TooLong => Err(anyhow!(
                    "line {number} is longer than {} MiB, the most a command may be; it is \
                     skipped",
                    MAX_LINE_BYTES >> 20
                )),
                Line::NotUtf8(at) => Err(anyhow!(
                    "line {number} is not UTF-8 (at byte {}); it is skipped",
                    at + 1
                )),
            };
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Quit) => return Ok(()),
                Err(e) => writeln!(out, "error: {e:#}")?,
            }
            self.tell_quarantines(out)?;
            for warning in self.session.mcp_warnings() {
                writeln!(out, "warning: {warning}")?;
            }
        }
    }

    /// Tells the user about every plugin the shell has stopped calling
    /// since the last command, once each.
    fn tell_quarantines(&mut self, out: &mut dyn Write) -> Result<()> {
        let quarantined: Vec<String> = self
            .session
            .shell
            .quarantined()
            .skip(self.quarantines_told)
            .map(ToString::to_string)
            .collect();
        for message in quarantined {
            writeln!(out, "warning: {message}")?;
            self.quarantines_told += 1;
        }
        Ok(())
    }

    fn command(&mut self, line: &str, out: &mut dyn Write) -> Result<Flow> {
        let (word, rest) = line
            .split_once(char::is_whitespace)
            .map(|(w, r)| (w, r.trim()))
            .unwrap_or((line, ""));
        match word {
            "" => {}
            "help" => writeln!(out, "{HELP}")?,
            "quit" | "exit" => return Ok(Flow::Quit),
            "tools" => self.tools(out)?,
            "call" => self.call(rest, out)?,
            "spawn" => self.spawn(rest, out)?,
            "agent" => self.switch(rest, out)?,
            "next" => self.next(out)?,
            "explain" => self.explain(rest, out)?,
            other => match did_you_mean(other, COMMANDS.iter().copied()) {
                hint if !hint.is_empty() => bail!("unknown command `{other}`{hint}"),
                _ => bail!("unknown command `{other}`; `help` lists the commands"),
            },
        }
        Ok(Flow::Continue)
    }

    fn tools(&mut self, out: &mut dyn Write) -> Result<()> {
        let tools = self.session.shell.next_request(&self.agent)?;
        writeln!(out, "{} sees {} tools:", self.agent, tools.len())?;
        for tool in &tools {
            // Its first line of text: many MCP servers begin a description with a line break.
            let summary = (tool.description.lines().map(str::trim))
                .find(|line| !line.is_empty())
                .unwrap_or_default();
            writeln!(
                out,
                "  {}  {}",
                tool.name,
                crate::commands::shortened(summary, 80)
            )?;
        }
        Ok(())
    }

    fn call(&mut self, rest: &str, out: &mut dyn Write) -> Result<()> {
        let (tool, json) = rest
            .split_once(char::is_whitespace)
            .map(|(t, j)| (t, j.trim()))
            .unwrap_or((rest, ""));
        if tool.is_empty() {
            bail!("call what? write `call <tool> [<json arguments>]`");
        }
        let arguments: Value = if json.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str::<crate::strict_json::StrictValue>(json)
                .map(|arguments| arguments.0)
                .map_err(|e| {
                    anyhow!(
                        "the arguments are not JSON: {json}: {}",
                        crate::strict_json::error_in_characters(&e, json)
                    )
                })?
        };
        let outcome = self.session.shell.call(&self.agent, tool, &arguments)?;
        writeln!(out, "{outcome}")?;
        Ok(())
    }

    fn spawn(&mut self, name: &str, out: &mut dyn Write) -> Result<()> {
        if name.is_empty() {
            bail!("spawn what? write `spawn <name>`");
        }
        let id = self.session.shell.create_agent(name, Some(&self.agent))?;
        writeln!(out, "started {id}; you are now its model")?;
        self.agent = id;
        Ok(())
    }

    fn switch(&mut self, path: &str, out: &mut dyn Write) -> Result<()> {
        if path.is_empty() {
            let core = self.session.shell.core();
            for (agent, _) in core.agents() {
                let marker = if agent == self.agent { "*" } else { " " };
                writeln!(out, "{marker} {agent}")?;
            }
            return Ok(());
        }
        // Past the limits no agent exists: said without quoting all of the path.
        crate::shell_core::check_agent_id(path)?;
        self.session.shell.require_agent(path)?;
        self.agent = path.to_string();
        writeln!(out, "you are now the model of {path}")?;
        Ok(())
    }

    fn next(&mut self, out: &mut dyn Write) -> Result<()> {
        let tools = self.session.shell.next_request(&self.agent)?;
        self.requests += 1;
        writeln!(
            out,
            "request {} of {}: {} tools, {} bytes of schemas, {} tokens ({}): {}",
            self.requests,
            self.agent,
            tools.len(),
            serde_json::to_string(&tools).map(|s| s.len()).unwrap_or(0),
            Tokenizer::default().count_tools(&tools),
            Tokenizer::default(),
            names(&tools)
        )?;
        for (plugin, text) in self.session.shell.system_prompt(&self.agent)? {
            writeln!(out, "system prompt from {plugin}:\n{text}")?;
        }
        Ok(())
    }

    fn explain(&mut self, tool: &str, out: &mut dyn Write) -> Result<()> {
        if tool.is_empty() {
            bail!("explain what? write `explain <tool>`");
        }
        for plugin in self.session.plugin_ids() {
            let explanation = self.session.shell.explain(&plugin, &self.agent, tool)?;
            writeln!(out, "{plugin}: {}", explanation.summary)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Shell;

    /// A session with no plugin, as `run` starts one.
    fn session() -> ProfileShell {
        let mut shell = Shell::new();
        shell.create_agent(MAIN_AGENT, None).unwrap();
        ProfileShell {
            shell,
            running: Vec::new(),
            mcp: None,
            mcp_told: 0,
        }
    }

    /// A session with no plugin and the person's input.
    fn play(input: &[u8]) -> (Result<()>, String) {
        let session = session();
        let mut out = Vec::new();
        let input = Inputs::read(std::io::Cursor::new(input.to_vec()), None);
        let ran = Repl::new(session).run(&input, &mut out, false);
        (ran, String::from_utf8(out).unwrap())
    }

    /// A description that begins with a line break, as the catalog's weather server writes
    /// them, shows its first line of text in `tools`, not nothing.
    #[test]
    fn tools_shows_the_first_line_of_text_of_each_description() {
        use crate::shell::{Origin, Tool};
        let mut session = session();
        let description =
            "\n    Get the weather for a city.\n\n    Args:\n        city: its name\n";
        (session.shell)
            .register_tools([Tool::new("get_weather", description, Origin::Builtin)])
            .unwrap();
        let mut out = Vec::new();
        let input = Inputs::read(std::io::Cursor::new(b"tools\n".to_vec()), None);
        Repl::new(session).run(&input, &mut out, false).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains("  get_weather  Get the weather for a city.\n"),
            "{out}"
        );
    }

    #[test]
    fn ctrl_c_ends_the_session_and_the_lines_after_it_do_not_run() {
        let line = |text: &str| Input::Line(Line::Text(text.to_string()));
        let input = Inputs::of(vec![line("help"), Input::Interrupted, line("spawn worker")]);
        let mut out = Vec::new();
        let mut repl = Repl::new(session());
        repl.run(&input, &mut out, false).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("help                   this list"), "{out}");
        assert!(out.ends_with("interrupted: the session ends\n"), "{out}");
        assert_eq!(repl.agent, MAIN_AGENT, "{out}");
    }

    #[test]
    fn a_line_that_is_not_utf8_is_said_and_the_session_goes_on() {
        let (ran, out) = play(b"explain caf\xe9\nhelp\nquit\n");
        ran.unwrap();
        assert!(
            out.contains("error: line 1 is not UTF-8 (at byte 12); it is skipped\n"),
            "{out}"
        );
        assert!(out.contains("help                   this list"), "{out}");
    }

    #[test]
    fn a_line_longer_than_the_limit_is_skipped_not_kept_or_echoed() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\nhelp\n");
        // The longest line taken: the limit, its newline aside.
        input.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES));
        input.extend_from_slice(b"\n");
        let (ran, out) = play(&input);
        ran.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "error: line 1 is longer than 1 MiB, the most a command may be; it is skipped"
        );
        assert!(out.contains("help                   this list"), "{out}");
        let last = lines.last().unwrap();
        assert!(
            last.starts_with("error: unknown command `yyy"),
            "{}",
            &last[..40]
        );
        assert!(!out.contains("xxx"));
    }

    #[test]
    fn an_agent_path_past_the_limits_is_refused_without_quoting_it_whole() {
        let path = format!("main{}", "/a".repeat(2_000));
        let (ran, out) = play(format!("agent {path}\nagent\n").as_bytes());
        ran.unwrap();
        assert!(
            out.contains("agents deep; a chain holds at most 64 (`main` is 1)"),
            "{out}"
        );
        assert!(out.len() < 1_000, "{out}");
        assert!(out.ends_with("* main\n"), "{out}");
    }
}
