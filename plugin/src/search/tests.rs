//! What a model relies on when it calls `tool_search`, checked on the native index.

use proptest::prelude::*;
use serde_json::json;

use super::SearchIndex;
use crate::registry::{Enrichment, Origin, Registry, ToolDef, ToolGroup};

fn tool(name: &str, description: &str, parameters: serde_json::Value) -> ToolDef {
    let server = name.split("__").next().unwrap_or(name).to_string();
    ToolDef {
        name: name.into(),
        description: description.into(),
        parameters: parameters.to_string(),
        origin: Origin::Mcp(server),
    }
}

fn catalog() -> SearchIndex {
    let none = json!({"type": "object", "properties": {}});
    let tools = vec![
        tool(
            "weather__get_forecast",
            "Get the weather forecast for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}),
        ),
        tool(
            "stocks__get_quote",
            "Get the latest price of a stock ticker.",
            none.clone(),
        ),
        tool(
            "browser__take_screenshot",
            "Capture the visible page as a PNG image.",
            none.clone(),
        ),
        tool(
            "git__git_commit",
            "Records changes to the repository.",
            none.clone(),
        ),
        tool(
            "fs__read_file",
            "Read the complete contents of a file.",
            none.clone(),
        ),
        tool(
            "fs__write_file",
            "Create or overwrite a file with new content.",
            none.clone(),
        ),
        tool("trains__get_tickets", "查询火车票余票信息。", none.clone()),
        tool(
            "cook__what_to_eat",
            "不知道吃什么？根据人数推荐菜品组合",
            none.clone(),
        ),
        tool(
            "slack__post_message",
            "Post a message to a Slack channel.",
            none.clone(),
        ),
        tool(
            "gh__create_issue",
            "Create a new issue in a GitHub repository.",
            none.clone(),
        ),
        tool(
            "gh__list_issues",
            "List issues of a GitHub repository.",
            none,
        ),
    ];
    let groups = vec![
        ToolGroup {
            name: "weather".into(),
            description: "Weather data from Open-Meteo.".into(),
        },
        ToolGroup {
            name: "trains".into(),
            description: "12306 铁路购票查询".into(),
        },
    ];
    SearchIndex::build(&Registry::new(tools, groups))
}

/// An index of MCP tools without parameters, each a name (`server__tool`) and a description.
fn index_of(tools: &[(&str, &str)]) -> SearchIndex {
    let none = json!({"type": "object", "properties": {}});
    let tools = tools
        .iter()
        .map(|&(name, description)| tool(name, description, none.clone()))
        .collect();
    SearchIndex::build(&Registry::new(tools, Vec::new()))
}

fn top(index: &SearchIndex, query: &str) -> Vec<String> {
    index
        .search(query, 5, |_| true)
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn first(index: &SearchIndex, query: &str) -> Option<String> {
    top(index, query).into_iter().next()
}

#[test]
fn stop_words_do_not_match() {
    let index = catalog();
    assert_eq!(
        top(&index, "post a slack message")[0],
        "slack__post_message"
    );
    assert!(top(&index, "the of a to").is_empty());
}

#[test]
fn the_particle_of_a_phrasal_verb_is_a_word() {
    // `out` in `sign me out` is what tells logOut from logIn; `up` and `down` likewise.
    let index = index_of(&[
        ("portal__logIn", "Log in to the portal."),
        ("portal__logOut", "Log out of the portal."),
        ("vm__start_up", "Start up a virtual machine."),
        ("vm__shut_down", "Shut down a virtual machine."),
    ]);
    for (query, wanted) in [
        ("sign me out of the portal", "portal__logOut"),
        ("power the vm down", "vm__shut_down"),
        ("bring the vm up", "vm__start_up"),
    ] {
        assert_eq!(first(&index, query).as_deref(), Some(wanted), "{query}");
    }
}

#[test]
fn a_compound_word_counts_once_in_a_tool_and_its_server() {
    // `PatientView` is the server's name whole and, as `patient`, part of most of its tools'
    // names: counted in both, it outweighed `out`, the word that tells which tool is meant.
    let none = json!({"type": "object", "properties": {}});
    let tools = [
        ("patientview__logOut", "Log Out"),
        (
            "patientview__savePatientManagement",
            "savePatientManagement",
        ),
        ("patientview__getPatientManagement", "getPatientManagement"),
        (
            "patientview__getBasicPatientDetails",
            "Get Basic Patient Information",
        ),
        ("mail__log_out", "Log out of the mail account."),
        ("cluster__scale_out", "Scale out the cluster."),
        ("shop__check_out", "Check out the cart."),
        ("timer__time_out", "Time out after a delay."),
    ]
    .iter()
    .map(|&(name, description)| tool(name, description, none.clone()))
    .collect();
    let groups = vec![ToolGroup {
        name: "patientview".into(),
        description: "PatientView: the REST API of PatientView".into(),
    }];
    let index = SearchIndex::build(&Registry::new(tools, groups));
    assert_eq!(
        first(&index, "sign me out of PatientView").as_deref(),
        Some("patientview__logOut")
    );
}

/// Two servers that both list submissions; only one of them is Hacker News, which its
/// description names in full and a request names by its initials.
fn submissions(hacker_news: &str) -> (Vec<ToolDef>, Vec<ToolGroup>) {
    let none = json!({"type": "object", "properties": {}});
    let tools = vec![
        tool(
            "forms__list_latest_submissions",
            "List the latest submissions of a form.",
            none.clone(),
        ),
        tool(
            "news__getUserSubmissions",
            "Get a user's submitted stories.",
            none,
        ),
    ];
    let groups = vec![
        ToolGroup {
            name: "forms".into(),
            description: "Online forms and surveys.".into(),
        },
        ToolGroup {
            name: "news".into(),
            description: hacker_news.into(),
        },
    ];
    (tools, groups)
}

#[test]
fn initials_in_capitals_name_the_server_whose_text_spells_them_out() {
    let (tools, groups) = submissions("The official Hacker News server.");
    let index = SearchIndex::build(&Registry::new(tools, groups));
    assert_eq!(
        first(&index, "submissions on HN").as_deref(),
        Some("news__getUserSubmissions")
    );
    // Written in lowercase, `hn` is no one's initials: the other words decide.
    assert_eq!(
        first(&index, "submissions on hn").as_deref(),
        Some("forms__list_latest_submissions")
    );
    // A word the query does not read (`MCP`, a catalog's stop word) is no one's initials
    // either: every server here would write `Model Context Protocol`.
    let tools = vec![
        tool(
            "plain__list_files",
            "List the files of a folder.",
            json!({}),
        ),
        tool(
            "spelled__list_files",
            "List the files of a folder.",
            json!({}),
        ),
    ];
    let groups = vec![
        ToolGroup {
            name: "plain".into(),
            description: "A model context protocol file server.".into(),
        },
        ToolGroup {
            name: "spelled".into(),
            description: "A Model Context Protocol file server.".into(),
        },
    ];
    let index = SearchIndex::build(&Registry::new(tools, groups));
    let scores: Vec<f32> = index
        .search_scored("an MCP tool to list files", 2, |_| true)
        .into_iter()
        .map(|(_, score)| score)
        .collect();
    assert_eq!(scores.len(), 2);
    assert_eq!(scores[0], scores[1], "{scores:?}");

    // A name of four words, and initials that are a query's only word.
    let (tools, _) = submissions("");
    let index = SearchIndex::build(&Registry::new(
        tools,
        vec![ToolGroup {
            name: "news".into(),
            description: "Mirrors the Open Source Vulnerability Database.".into(),
        }],
    ));
    assert_eq!(
        first(&index, "OSVD").as_deref(),
        Some("news__getUserSubmissions")
    );

    // A camel-case name gives its capitals, and a server that joins later its own.
    let (tools, groups) = submissions("Reads HackerNews for you.");
    let others: Vec<ToolDef> = (0..200)
        .map(|i| {
            let description = format!("Runs queued job {i} of the nightly batch and reports it.");
            tool(&format!("misc__job_{i}"), &description, json!({}))
        })
        .collect();
    let before: Vec<ToolDef> = others.iter().chain(&tools[..1]).cloned().collect();
    let mut index = SearchIndex::build(&Registry::new(before, groups[..1].to_vec()));
    let all: Vec<ToolDef> = others.into_iter().chain(tools).collect();
    let updated = index.update(
        &Registry::new(all, groups),
        &["news__getUserSubmissions".to_string()],
    );
    assert!(
        matches!(updated, super::Updated::Grown { added: 1, .. }),
        "a server of one tool joins by an update: {updated:?}"
    );
    assert_eq!(
        first(&index, "submissions on HN").as_deref(),
        Some("news__getUserSubmissions")
    );
}

#[test]
fn an_exact_whole_name_ranks_first() {
    let index = catalog();
    // "issues" and "repository" favour list_issues; the exact name still wins.
    assert_eq!(
        first(&index, "gh__create_issue").as_deref(),
        Some("gh__create_issue")
    );
    assert_eq!(
        first(&index, "create_issue").as_deref(),
        Some("gh__create_issue")
    );
    assert_eq!(
        first(&index, "Create Issue").as_deref(),
        Some("gh__create_issue")
    );
    // An MCP tool's own name may hold `__`: it is found whole, as the server named it.
    let bridge = index_of(&[
        ("sms__get__messages_id", "Read a message."),
        ("sms__delete__messages_id", "Delete a message."),
    ]);
    for query in [
        "delete__messages_id",
        "sms__delete__messages_id",
        "messages_id",
    ] {
        let exact: Vec<&str> = bridge
            .exact_matches(query)
            .into_iter()
            .map(|doc| bridge.names[doc as usize].as_str())
            .collect();
        let wanted = match query {
            // What follows the last `__` is a key too, as before.
            "messages_id" => vec!["sms__delete__messages_id", "sms__get__messages_id"],
            _ => vec!["sms__delete__messages_id"],
        };
        assert_eq!(sorted(exact), wanted, "{query}");
    }
    assert_eq!(
        first(&bridge, "delete__messages_id").as_deref(),
        Some("sms__delete__messages_id")
    );
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

#[test]
fn english_words_match_in_any_inflection() {
    let index = catalog();
    assert_eq!(
        first(&index, "forecasts of the weather").as_deref(),
        Some("weather__get_forecast")
    );
    assert_eq!(
        first(&index, "committing my changes").as_deref(),
        Some("git__git_commit")
    );
}

#[test]
fn a_chinese_query_finds_a_tool_described_in_english() {
    let index = catalog();
    assert_eq!(
        first(&index, "明天的天气预报").as_deref(),
        Some("weather__get_forecast")
    );
    assert_eq!(
        first(&index, "给网页截图").as_deref(),
        Some("browser__take_screenshot")
    );
    assert_eq!(
        first(&index, "查询股票价格").as_deref(),
        Some("stocks__get_quote")
    );
}

#[test]
fn maintained_dictionaries_reach_words_the_vocabulary_lacks() {
    let none = json!({"type": "object", "properties": {}});
    let tools = vec![
        tool("space__comet_orbit", "Orbit of a comet.", none.clone()),
        tool("space__planet_facts", "Facts about a planet.", none.clone()),
        tool(
            "garage__list_automobiles",
            "List the automobiles in a garage.",
            none.clone(),
        ),
        tool("garage__list_tools", "List the tools on the wall.", none),
    ];
    let index = SearchIndex::build(&Registry::new(tools, vec![]));
    // CC-CEDICT glosses: 彗星 -> comet, 行星 -> planet.
    assert_eq!(first(&index, "彗星").as_deref(), Some("space__comet_orbit"));
    assert_eq!(
        first(&index, "这颗行星").as_deref(),
        Some("space__planet_facts")
    );
    // A CC-CEDICT reading defined as a variant of another: the word 回复 (not only its
    // character 复) reaches reply, at a word's gloss weight.
    let chat = index_of(&[
        ("chat__reply", "Reply in a thread."),
        ("chat__post", "Post to a channel."),
    ]);
    assert_eq!(first(&chat, "回复一下").as_deref(), Some("chat__reply"));
    let reply = chat
        .read_query("回复一下")
        .into_iter()
        .flat_map(|slot| slot.forms)
        .flatten()
        .filter(|t| t.term == "repli")
        .map(|t| t.weight)
        .fold(0.0, f32::max);
    assert_eq!(reply, 0.6);
    // WordNet synonyms: car -> automobile.
    assert_eq!(
        first(&index, "list cars").as_deref(),
        Some("garage__list_automobiles")
    );
}

#[test]
fn a_named_docx_file_reaches_a_tool_that_says_word_document() {
    // Catalogs say "Word document" where users name the file (`.docx`), as they say
    // "spreadsheet" and "presentation" for `.xlsx` and `.pptx`.
    let index = index_of(&[
        (
            "office__get_document_text",
            "Extract all text from a Word document.",
        ),
        ("notes__get_text", "Get the text of a note."),
    ]);
    for query in [
        "get the text of minutes.docx",
        "把 会议纪要.docx 里的文字导出来",
    ] {
        assert_eq!(
            first(&index, query).as_deref(),
            Some("office__get_document_text"),
            "{query}"
        );
    }
}

#[test]
fn a_named_currency_or_city_reaches_the_tool_that_takes_one() {
    // Requests name the euro or Oslo; tools say what they take: a currency, a city.
    let index = index_of(&[
        (
            "money__exchange_rate",
            "Get the exchange rate between a base currency and a target currency.",
        ),
        (
            "forecast__by_city",
            "Get the weather forecast for a city by name.",
        ),
        ("notes__get_text", "Get the text of a note."),
    ]);
    for (query, tool) in [
        (
            "how many dollars is one euro worth today",
            "money__exchange_rate",
        ),
        ("2023年12月29日那天欧元兑日元是多少", "money__exchange_rate"),
        (
            "will I need an umbrella in Oslo tomorrow",
            "forecast__by_city",
        ),
        ("哈尔滨这周末最低零下多少度", "forecast__by_city"),
        // Two words, in the plural; a name with an accent.
        ("what do 50 swiss francs buy", "money__exchange_rate"),
        ("should I pack an umbrella for Bogotá", "forecast__by_city"),
        // `上海` is glossed `shanghai municipality`: the city's name first.
        ("上海明天要带伞吗", "forecast__by_city"),
        // A longer name's last word is what it names: the Hong Kong dollar is a currency. A
        // title's capitals are no names.
        (
            "what are 100 Hong Kong Dollars worth",
            "money__exchange_rate",
        ),
        ("Will It Rain In Oslo Tomorrow", "forecast__by_city"),
        (
            "From Sydney, walk to the Sydney Opera House",
            "forecast__by_city",
        ),
    ] {
        assert_eq!(first(&index, query).as_deref(), Some(tool), "{query}");
    }
    // A name is read as written: `france` stems to `franc`, but France is no currency. And a
    // Chinese word by its first sense: `汉堡` is a hamburger before it is Hamburg. A city's
    // name inside a longer proper name is not the city.
    for query in [
        "a week in france",
        "汉堡怎么做",
        "walk to the Sydney Opera House",
        "a Hong Kong Dollar Index chart",
    ] {
        assert_eq!(top(&index, query), Vec::<String>::new(), "{query}");
    }
}

#[test]
fn a_named_file_or_directory_reaches_the_tool_for_its_kind() {
    // Requests name `sign_0412.png` or `/srv/media/uploads`; tools say an image, an audio
    // file, a directory.
    let index = index_of(&[
        (
            "vision__read_text",
            "Read the text shown in an image from a URL.",
        ),
        ("audio__duration", "Get the duration of an audio file."),
        (
            "fs__list_directory",
            "List the entries of a directory with their sizes.",
        ),
        ("notes__find", "Find a note by the text it holds."),
    ]);
    for (query, tool) in [
        (
            "what does https://cdn.example.net/sign_0412.png say",
            "vision__read_text",
        ),
        ("发票.png 上的税号是多少", "vision__read_text"),
        ("how long is interview.wav", "audio__duration"),
        ("what is in /srv/media/uploads", "fs__list_directory"),
    ] {
        assert_eq!(first(&index, query).as_deref(), Some(tool), "{query}");
    }
}

#[test]
fn a_shells_enrichment_makes_a_tool_findable() {
    let none = json!({"type": "object", "properties": {}});
    let tools = vec![
        tool("jira__create", "Create an item.", none.clone()),
        tool("notes__create", "Create a note.", none),
    ];
    let enrich = |tool: &str| Enrichment {
        tool: tool.into(),
        keywords: vec!["bug".into(), "issue tracker".into(), "x".repeat(10_000)],
        examples: vec!["open a ticket for the login crash".into()],
        descriptions: vec!["在问题跟踪系统中创建工单".into()],
    };
    let plain = SearchIndex::build(&Registry::new(tools.clone(), vec![]));
    assert!(top(&plain, "file a bug ticket").is_empty());
    let registry = Registry::new(tools, vec![])
        .with_enrichment(vec![enrich("jira__create"), enrich("not_registered")]);
    assert!(registry.enrichment_of("not_registered").is_none());
    let kept = registry.enrichment_of("jira__create").unwrap();
    assert_eq!(
        kept.keywords[2].chars().count(),
        crate::registry::MAX_ENRICHMENT_CHARS
    );
    let index = SearchIndex::build(&registry);
    assert_eq!(top(&index, "file a bug ticket"), ["jira__create"]);
    assert_eq!(first(&index, "创建工单").as_deref(), Some("jira__create"));
    // The tool's own words still count most.
    assert_eq!(
        first(&index, "create note").as_deref(),
        Some("notes__create")
    );
}

#[test]
fn a_keyword_the_shell_gives_one_tool_among_many_counts_as_a_keyword() {
    // A shell enriches the few tools it knows more of. Among a hundred tools without
    // enrichment, one tool's keyword still outweighs another's parameter description.
    let themed = json!({"type": "object", "properties": {
        "theme": {"type": "string", "description": "An antd theme to render with"}
    }});
    let counted = json!({"type": "object", "properties": {
        "count": {"type": "integer", "description": "How many items to return"}
    }});
    let mut tools: Vec<ToolDef> = (0..100)
        .map(|i| {
            let description = format!("Tool number {i}.");
            tool(&format!("misc__tool_{i}"), &description, counted.clone())
        })
        .collect();
    tools.push(tool(
        "ui__get_docs",
        "Get the docs of a component.",
        counted,
    ));
    tools.push(tool("charts__render", "Render a chart.", themed));
    let registry = Registry::new(tools, vec![]).with_enrichment(vec![Enrichment {
        tool: "ui__get_docs".into(),
        keywords: vec!["antd".into()],
        examples: vec![],
        descriptions: vec![],
    }]);
    let index = SearchIndex::build(&registry);
    assert_eq!(top(&index, "antd"), ["ui__get_docs", "charts__render"]);
}

#[test]
fn a_word_every_tool_holds_still_finds_tools_after_servers_join() {
    // An updated index keeps its last full build's tool count; a word that more tools hold
    // than that count once weighed less than nothing, and found no tool at all.
    let files = |range: std::ops::Range<usize>| -> Vec<ToolDef> {
        range
            .map(|i| tool(&format!("s{i}__open_file"), "Open a file.", json!({})))
            .collect()
    };
    let mut index = SearchIndex::build(&Registry::new(files(0..32), vec![]));
    let changed: Vec<String> = (32..34).map(|i| format!("s{i}__open_file")).collect();
    let updated = index.update(&Registry::new(files(0..34), vec![]), &changed);
    assert!(matches!(updated, super::Updated::Grown { added: 2, .. }));
    assert_eq!(top(&index, "file").len(), 5);
}

#[test]
fn an_english_query_finds_a_tool_described_in_chinese() {
    let index = catalog();
    assert_eq!(
        first(&index, "train tickets").as_deref(),
        Some("trains__get_tickets")
    );
    assert_eq!(
        first(&index, "recommend a dish for dinner").as_deref(),
        Some("cook__what_to_eat")
    );
}

#[test]
fn a_chinese_query_finds_a_tool_described_in_chinese() {
    let index = catalog();
    assert_eq!(
        first(&index, "还有余票吗").as_deref(),
        Some("trains__get_tickets")
    );
}

#[test]
fn a_typo_or_a_prefix_of_a_name_word_still_finds_the_tool() {
    let index = catalog();
    assert_eq!(
        first(&index, "screnshot").as_deref(),
        Some("browser__take_screenshot")
    );
    assert_eq!(
        first(&index, "screen").as_deref(),
        Some("browser__take_screenshot")
    );
    assert_eq!(
        first(&index, "forecsat").as_deref(),
        Some("weather__get_forecast")
    );
}

#[test]
fn only_eligible_tools_are_returned() {
    let index = catalog();
    let found = index.search("file", 5, |name| name != "fs__read_file");
    assert_eq!(found, ["fs__write_file"]);
    assert!(index.search("file", 5, |_| false).is_empty());
}

#[test]
fn ties_break_by_name_and_top_k_is_respected() {
    let none = json!({});
    let tools = ["b__sync", "c__sync", "a__sync"]
        .iter()
        .map(|n| tool(n, "Sync the data.", none.clone()))
        .collect();
    let index = SearchIndex::build(&Registry::new(tools, vec![]));
    assert_eq!(
        index.search("sync data", 5, |_| true),
        ["a__sync", "b__sync", "c__sync"]
    );
    assert_eq!(
        index.search("sync data", 2, |_| true),
        ["a__sync", "b__sync"]
    );
    assert!(index.search("sync data", 0, |_| true).is_empty());
}

#[test]
fn the_first_definition_of_a_name_is_indexed() {
    let tools = vec![
        tool("dup", "Reads weather.", json!({})),
        tool("dup", "Sends email.", json!({})),
    ];
    let index = SearchIndex::build(&Registry::new(tools, vec![]));
    assert_eq!(index.len(), 1);
    assert_eq!(index.search("weather", 5, |_| true), ["dup"]);
    assert!(index.search("email", 5, |_| true).is_empty());
}

#[test]
fn parameters_and_malformed_schemas_are_handled() {
    let tools = vec![
        tool(
            "a__lookup",
            "Look something up.",
            json!({"type": "object", "properties": {"isbn": {"type": "string", "description": "Book number"}}}),
        ),
        ToolDef {
            name: "b__broken".into(),
            description: "Broken schema.".into(),
            parameters: "{not json".into(),
            origin: Origin::Builtin,
        },
    ];
    let index = SearchIndex::build(&Registry::new(tools, vec![]));
    assert_eq!(index.search("isbn", 5, |_| true), ["a__lookup"]);
    assert_eq!(index.search("broken", 5, |_| true), ["b__broken"]);
}

proptest! {
    #[test]
    fn any_query_text_is_searched_without_panicking(query in any::<String>(), top_k in 0usize..60) {
        let index = catalog();
        let found = index.search(&query, top_k, |_| true);
        prop_assert!(found.len() <= top_k);
    }

    #[test]
    fn any_mix_of_scripts_is_searched_without_panicking(
        query in "[a-zA-Z0-9 _\\-./\u{4e00}-\u{9fff}\u{3040}-\u{30ff}ＡＢ１，。！？]{0,80}"
    ) {
        let index = catalog();
        let found = index.search(&query, 5, |_| true);
        prop_assert!(found.len() <= 5);
    }
}

/// Lowercase, runs of anything but letters and digits as one `_`, none at the ends: the
/// definition `normalise_name` implements.
fn normalised_by_definition(text: &str) -> String {
    let lower: String = text.chars().flat_map(char::to_lowercase).collect();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

#[test]
fn names_normalise_to_lowercase_words_joined_by_underscores() {
    use super::names::normalise_name;
    for (text, normal) in [
        ("  Create  Issue ", "create_issue"),
        ("gh__create_issue", "gh_create_issue"),
        ("__x--y__", "x_y"),
        ("", ""),
        ("--", ""),
        ("Ｇｅｔ 天气", "ｇｅｔ_天气"),
    ] {
        assert_eq!(normalise_name(text), normal, "{text:?}");
    }
}

proptest! {
    #[test]
    fn normalise_name_follows_its_definition(text in "[ -~]{0,24}|\\PC{0,24}") {
        prop_assert_eq!(super::names::normalise_name(&text), normalised_by_definition(&text));
    }

    #[test]
    fn a_name_key_is_the_key_of_its_normalised_name(
        text in "[a-zA-Z0-9 _./-]{0,24}|\\PC{0,24}",
    ) {
        use super::names::{name_key, normalise_name};
        let normal = normalise_name(&text);
        prop_assert_eq!(name_key(&text), name_key(&normal));
        // Written out: the key is FNV-1a over the normalised bytes.
        let fnv = normal.bytes().fold(0xcbf2_9ce4_8422_2325u64, |key, b| {
            (key ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        prop_assert_eq!(name_key(&text), fnv);
    }
}

#[test]
fn a_typo_keeps_the_first_and_last_letter_of_a_word() {
    let index = catalog();
    // One edit inside the word: still the tool.
    assert_eq!(
        first(&index, "screemshot").as_deref(),
        Some("browser__take_screenshot")
    );
    // One edit at either end is another word, not a typo.
    assert!(top(&index, "xcreenshot").is_empty());
    assert!(top(&index, "forecasx").is_empty());
}

#[test]
fn a_real_word_is_not_read_as_a_typo_of_a_name() {
    let none = json!({"type": "object", "properties": {}});
    let registry = Registry::new(
        vec![tool(
            "browser__click",
            "Press an element on the page.",
            none.clone(),
        )],
        Vec::new(),
    );
    let index = SearchIndex::build(&registry);
    // `clock` is one edit from `click`, but it is a word of its own.
    assert!(top(&index, "look at the clock").is_empty());
    // A word no dictionary knows, one edit from the name, is still a typo.
    assert_eq!(first(&index, "cliick").as_deref(), Some("browser__click"));
}

/// Five tools of one API that all match, and a weaker match on another server.
fn one_api_and_another_server() -> SearchIndex {
    let none = json!({"type": "object", "properties": {}});
    let mut tools: Vec<ToolDef> = [
        "list invoices",
        "create an invoice",
        "send an invoice by email",
        "void an invoice",
        "download an invoice as PDF",
    ]
    .iter()
    .enumerate()
    .map(|(i, what)| {
        tool(
            &format!("billing__invoice_{i}"),
            &format!("Invoices: {what}."),
            none.clone(),
        )
    })
    .collect();
    tools.push(tool(
        "mail__send_email",
        "Send an email message.",
        none.clone(),
    ));
    tools.push(tool(
        "shop__invoice_link",
        "Link to an invoice of an order.",
        none,
    ));
    SearchIndex::build(&Registry::new(tools, Vec::new()))
}

#[test]
fn siblings_that_match_clearly_better_are_not_crowded_out_by_another_servers_weaker_tool() {
    let index = one_api_and_another_server();
    // Each invoice tool says "invoice" in its name and its description; the shop's link tool
    // scores a third less. Crowding is a tie-break, so the top five are the five siblings.
    let found = top(&index, "invoice");
    assert!(
        found.iter().all(|t| t.starts_with("billing__")),
        "{found:?}"
    );
    // A sibling that spells out the query still comes first.
    assert_eq!(
        first(&index, "download invoice pdf").as_deref(),
        Some("billing__invoice_4")
    );
}

#[test]
fn equal_tools_of_different_servers_are_offered_before_more_of_one_server() {
    let none = json!({"type": "object", "properties": {}});
    // Five servers with the same read tool, and a sixth tool on the first server that is
    // exactly as good: the other servers' copies come before the first server's second.
    let mut tools: Vec<ToolDef> = (0..5)
        .map(|i| {
            tool(
                &format!("s{i}__read_file"),
                "Read a file from disk.",
                none.clone(),
            )
        })
        .collect();
    tools.push(tool("s0__read_file_again", "Read a file from disk.", none));
    let index = SearchIndex::build(&Registry::new(tools, Vec::new()));
    let found = top(&index, "read a file from disk");
    let servers: std::collections::HashSet<&str> = found
        .iter()
        .map(|t| t.split("__").next().unwrap())
        .collect();
    assert_eq!(servers.len(), 5, "{found:?}");
}

/// A word of its own for each `i` (`qx` and five consonants that no stemmer shortens), with a
/// `kind` letter so that two kinds never share one.
fn made_up_word(kind: char, i: usize) -> String {
    const LETTERS: &[u8] = b"bcfhjkmnpqrtvwxz";
    let mut word = format!("qx{kind}");
    let mut n = i;
    for _ in 0..5 {
        word.push(LETTERS[n % 16] as char);
        n /= 16;
    }
    word
}

/// A registry that sends more text than an index reads is read evenly: each tool as far as
/// the same share of the budget, its beginning first, and the index says so for the log. A
/// smaller registry is read as far as a tool is read.
#[test]
fn a_registry_past_the_text_budget_reads_each_tool_up_to_an_equal_share() {
    let filler = |bytes: usize| "lorem ".repeat(bytes / 6);
    let tools = |n: usize| -> Vec<ToolDef> {
        (0..n)
            .map(|i| {
                let description = format!(
                    "{} {} {} {}",
                    made_up_word('b', i),
                    filler(30_000),
                    made_up_word('f', i),
                    filler(10_000)
                );
                tool(&format!("s{i}__t"), &description, json!({}))
            })
            .collect()
    };
    assert_eq!(SearchIndex::default().unread(), None);
    let small = SearchIndex::build(&Registry::new(tools(10), Vec::new()));
    assert_eq!(small.unread(), None);
    assert_eq!(
        first(&small, &made_up_word('f', 7)).as_deref(),
        Some("s7__t")
    );

    let large = SearchIndex::build(&Registry::new(tools(600), Vec::new()));
    let share = super::documents::MAX_REGISTRY_TEXT_BYTES / 600;
    assert_eq!(
        large.unread().unwrap(),
        format!(
            "the registry's tools and servers send more than 16 MiB of text: each is read up \
             to {share} bytes"
        )
    );
    assert_eq!(
        first(&large, &made_up_word('b', 7)).as_deref(),
        Some("s7__t")
    );
    assert_eq!(first(&large, &made_up_word('f', 7)), None);
}

/// The text budget counts everything an index reads: a tool's enrichment, which the shell adds
/// to a one-word description, and each server's description, read as a document of its own.
/// Either, past the budget, is read up to the same share as a tool.
#[test]
fn enrichment_and_server_descriptions_count_toward_the_text_budget() {
    let filler = |bytes: usize| "lorem ".repeat(bytes / 6);
    let names: Vec<String> = (0..600).map(|i| format!("s{i}__t")).collect();
    let tools = || -> Vec<ToolDef> { names.iter().map(|n| tool(n, "x", json!({}))).collect() };
    let enrichment = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            // Read in this order: keywords, examples, descriptions.
            let mut descriptions: Vec<String> = (0..31).map(|_| filler(480)).collect();
            descriptions.push(made_up_word('f', i));
            Enrichment {
                tool: name.clone(),
                keywords: vec![made_up_word('b', i)],
                examples: (0..30).map(|_| filler(480)).collect(),
                descriptions,
            }
        })
        .collect();
    let enriched =
        SearchIndex::build(&Registry::new(tools(), Vec::new()).with_enrichment(enrichment));
    assert!(
        enriched.unread().is_some(),
        "30 KB of enrichment x 600 tools was read whole"
    );
    assert_eq!(
        first(&enriched, &made_up_word('b', 7)).as_deref(),
        Some("s7__t")
    );
    assert_eq!(first(&enriched, &made_up_word('f', 7)), None);

    let groups = (0..600)
        .map(|i| ToolGroup {
            name: format!("s{i}"),
            description: format!(
                "{} {} {}",
                made_up_word('b', i),
                filler(30_000),
                made_up_word('f', i)
            ),
        })
        .collect();
    let described = SearchIndex::build(&Registry::new(tools(), groups));
    assert!(
        described.unread().is_some(),
        "30 KB x 600 servers was read whole"
    );
    assert_eq!(
        first(&described, &made_up_word('b', 7)).as_deref(),
        Some("s7__t")
    );
    assert_eq!(first(&described, &made_up_word('f', 7)), None);
}

/// An update that takes a registry past the text budget, or back under it, reads every tool
/// again: the index then reads what a full build of the same registry reads, and says so.
#[test]
fn an_update_across_the_text_budget_reads_as_a_full_build() {
    let budget = super::documents::MAX_REGISTRY_TEXT_BYTES;
    // Tools of 32 KB sent each, a made-up word at each end.
    let sized = |i: usize| {
        let (front, back) = (made_up_word('b', i), made_up_word('f', i));
        let name = format!("s{i:04}__t");
        let filler = "lorem ".repeat((32 << 10) / 6 - 10);
        let description = format!("{front} {filler}");
        let description = format!(
            "{description}{} {back}",
            " ".repeat((32 << 10) - name.len() - description.len() - back.len() - 3)
        );
        tool(&name, &description, json!({}))
    };
    let under = budget / (32 << 10) - 1;
    let registry = |n: usize| Registry::new((0..n).map(sized).collect(), Vec::new());
    let mut index = SearchIndex::build(&registry(under));
    assert_eq!(index.unread(), None);

    let over = registry(under + 2);
    let joined: Vec<String> = (under..under + 2).map(|i| format!("s{i:04}__t")).collect();
    assert_eq!(index.update(&over, &joined), super::Updated::Rebuilt);
    assert!(index.unread().is_some());
    assert_eq!(index.unread(), SearchIndex::build(&over).unread());
    assert_eq!(first(&index, &made_up_word('f', 3)), None);

    assert_eq!(
        index.update(&registry(under), &joined),
        super::Updated::Rebuilt
    );
    assert_eq!(index.unread(), None);
    assert_eq!(
        first(&index, &made_up_word('f', 3)).as_deref(),
        Some("s0003__t")
    );
}

/// An index meets at most `MAX_PIECES` distinct words: the words met after them are not
/// searched (each would cost the component memory), the ones before still are, and the index
/// says so for the log.
#[test]
fn an_index_meets_a_bounded_number_of_distinct_words() {
    let per_tool = 1_000;
    let tools: Vec<ToolDef> = (0..super::documents::MAX_PIECES / per_tool + 10)
        .map(|t| {
            let words: Vec<String> = (0..per_tool)
                .map(|w| made_up_word('b', t * per_tool + w))
                .collect();
            // Numbered so that the name order, which the build reads in, is this order.
            tool(&format!("s{t:04}__t"), &words.join(" "), json!({}))
        })
        .collect();
    let last = tools.len() - 1;
    let index = SearchIndex::build(&Registry::new(tools, Vec::new()));
    assert_eq!(
        index.unread().unwrap(),
        "the registry's text holds more than 262144 distinct words: the rest are not searched"
    );
    assert_eq!(
        first(&index, &made_up_word('b', 5)).as_deref(),
        Some("s0000__t")
    );
    assert_eq!(first(&index, &made_up_word('b', last * per_tool + 5)), None);
}
