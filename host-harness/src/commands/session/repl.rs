//! The interactive session: a person plays the model, one command per line
//! (so it also runs from a pipe). A command that fails prints why and the
//! session goes on.

use std::io::{BufRead, Write};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

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
quit                   end the session";

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

    /// Reads commands until `quit` or the end of `input`. With `prompt`
    /// (a terminal), shows the agent before each command.
    pub fn run(
        &mut self,
        input: &mut dyn BufRead,
        out: &mut dyn Write,
        prompt: bool,
    ) -> Result<()> {
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
        let mut line = String::new();
        loop {
            if prompt {
                write!(out, "{}> ", self.agent)?;
                out.flush()?;
            }
            line.clear();
            if input.read_line(&mut line).context("reading a command")? == 0 {
                return Ok(());
            }
            match self.command(line.trim(), out) {
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
            let summary = tool.description.lines().next().unwrap_or_default();
            writeln!(out, "  {}  {}", tool.name, shorten(summary, 80))?;
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
            serde_json::from_str(json)
                .with_context(|| format!("the arguments are not JSON: {json}"))?
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

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
