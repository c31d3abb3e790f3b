"""Projects nest at most MAX_DEPTH levels (a root is level 1), counting every sub-project: creating a
project below the deepest level is refused, and so is a move that would take any project of the moved
subtree below it, whether asked of the use case or saved through the model (the Django admin)."""

import pytest
from django.core.exceptions import ValidationError

from policies_app.errors import Invalid
from policies_app.models import Project
from policies_app.models.projects import MAX_DEPTH
from policies_app.projects import projects

pytestmark = pytest.mark.django_db


def depth(project: Project) -> int:
    project.refresh_from_db()
    return project.lineage.count("/")  # "/" for a root (level 1), "/1/" for its children, ...


def chain(levels: int, name: str = "level") -> list[Project]:
    """A root and its descendants, ``levels`` projects in all, the deepest last."""
    nodes = [Project.objects.create(name=f"{name} 1")]
    for level in range(2, levels + 1):
        nodes.append(Project.objects.create(name=f"{name} {level}", parent=nodes[-1]))
    return nodes


def test_a_project_may_be_created_at_the_deepest_level_and_not_below_it(world):
    deepest = chain(MAX_DEPTH)[-1]
    assert depth(deepest) == MAX_DEPTH
    with pytest.raises(Invalid) as refusal:
        projects.create_project(world.admin, name="too deep", parent=deepest)
    assert refusal.value.errors["parent"] == [f"Projects may be nested at most {MAX_DEPTH} levels deep."]
    assert not Project.objects.filter(name="too deep").exists()
    allowed = projects.create_project(world.admin, name="deepest too", parent=deepest.parent)
    assert depth(allowed) == MAX_DEPTH


def test_a_move_that_takes_a_sub_project_below_the_deepest_level_is_refused(world):
    levels = chain(MAX_DEPTH - 1)
    subtree_root, child = chain(2, "moved")
    with pytest.raises(Invalid) as refusal:
        projects.update_project(world.admin, subtree_root, parent=levels[-1])
    assert "a sub-project of moved 1 would be 33 levels deep" in refusal.value.errors["parent"][0]
    assert (depth(subtree_root), depth(child)) == (1, 2), "nothing moved"
    # One level higher, the whole subtree fits.
    projects.update_project(world.admin, subtree_root, parent=levels[-2])
    assert depth(child) == MAX_DEPTH


def test_the_model_refuses_the_same_move_when_saved_directly(world):
    levels = chain(MAX_DEPTH - 1)
    subtree_root, child = chain(2, "moved")
    subtree_root.parent = levels[-1]
    with pytest.raises(ValidationError) as refusal:
        subtree_root.full_clean()  # what the Django admin's form runs
    assert "33 levels deep" in str(refusal.value)
    with pytest.raises(ValidationError):
        subtree_root.save()
    assert depth(child) == 2
