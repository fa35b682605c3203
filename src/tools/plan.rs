//! Group `plan`: `update_plan`, the agent's plan for the task at hand, kept by the server
//! (one per session) and shown back as a checklist. The rules are enforced, not only
//! described: a refused update leaves the previous plan as it was.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Registry, RegistryError, Tool, ToolError, ToolOutput};

use super::Env;
use super::board::{Plan, Status, Step};
use super::common::args;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(
        "plan",
        Arc::new(UpdatePlan {
            env: Arc::clone(env),
        }),
    )
}

/// The plan as a checklist: the explanation on top, then one line per step.
pub fn render(plan: &Plan) -> String {
    let mut text = String::new();
    if let Some(e) = &plan.explanation {
        text.push_str(e.trim());
        text.push_str("\n\n");
    }
    let done = plan
        .plan
        .iter()
        .filter(|s| s.status == Status::Completed)
        .count();
    text.push_str(&format!("Plan ({done}/{} done):\n", plan.plan.len()));
    for s in &plan.plan {
        text.push_str(&format!("{} {}\n", s.status.mark(), s.step));
    }
    text
}

pub(crate) struct UpdatePlan {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct PlanArgs {
    explanation: Option<String>,
    plan: Vec<Step>,
}

/// The plan if it keeps the rules: at least one step, none empty, at most one in progress.
fn checked(a: PlanArgs) -> Result<Plan, ToolError> {
    if a.plan.is_empty() {
        return Err(ToolError::invalid_input(
            "the plan has no steps",
            "send at least one step: {\"plan\": [{\"step\": \"…\", \"status\": \"pending\"}]}",
        ));
    }
    let empty: Vec<usize> = (0..a.plan.len())
        .filter(|&i| a.plan[i].step.trim().is_empty())
        .collect();
    if !empty.is_empty() {
        return Err(ToolError::invalid_input(
            format!("step {empty:?} (0-based) is empty"),
            "give every step a short description, or leave the empty ones out",
        ));
    }
    let running: Vec<&str> = a
        .plan
        .iter()
        .filter(|s| s.status == Status::InProgress)
        .map(|s| s.step.as_str())
        .collect();
    if running.len() > 1 {
        return Err(ToolError::invalid_input(
            format!(
                "{} steps are in_progress ({}); at most one may be",
                running.len(),
                running.join("; ")
            ),
            "keep the step you are working on in_progress and mark the others pending or completed",
        ));
    }
    let explanation = a
        .explanation
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty());
    let plan = a
        .plan
        .into_iter()
        .map(|s| Step {
            step: s.step.trim().to_string(),
            status: s.status,
        })
        .collect();
    Ok(Plan { explanation, plan })
}

impl Tool for UpdatePlan {
    fn name(&self) -> &str {
        "update_plan"
    }

    fn title(&self) -> Option<String> {
        Some("Update plan".into())
    }

    fn description(&self) -> String {
        "Keep a step-by-step plan for the current task and update it as you go: send the whole \
         plan each time (steps in order, each pending, in_progress or completed; at most one \
         in_progress), with an optional explanation of what changed. The person sees it; the \
         result shows it back as a checklist."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "description": "Why the plan changed (optional)."},
                "plan": {
                    "type": "array",
                    "minItems": 1,
                    "description": "The whole plan, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "description": "What to do, in a few words."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        })
    }

    fn idempotent(&self) -> bool {
        true
    }

    fn destructive(&self) -> bool {
        false
    }

    fn run(
        self: Arc<Self>,
        input: Value,
        _ctx: CallContext,
    ) -> BoxFuture<'static, crate::core::ToolResult> {
        Box::pin(async move {
            let plan = checked(args(input)?)?;
            let text = render(&plan);
            let data = json!({"plan": plan});
            self.env.board.set_plan(plan);
            Ok(ToolOutput::new(text, data))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<Plan, ToolError> {
        checked(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn rules_hold() {
        assert!(parse(json!({"plan": []})).is_err());
        assert!(parse(json!({"plan": [{"step": " ", "status": "pending"}]})).is_err());
        let two = parse(json!({"plan": [
            {"step": "a", "status": "in_progress"},
            {"step": "b", "status": "in_progress"}]}));
        assert!(two.unwrap_err().message.contains("2 steps are in_progress"));
        let ok = parse(json!({"explanation": " why ", "plan": [
            {"step": "a", "status": "completed"},
            {"step": "b ", "status": "in_progress"},
            {"step": "c", "status": "pending"}]}))
        .unwrap();
        assert_eq!(
            render(&ok),
            "why\n\nPlan (1/3 done):\n[x] a\n[>] b\n[ ] c\n"
        );
    }
}
